"""Steady client load through a deployment's front door with the real ``vllm bench serve``.

``Traffic`` runs rounds of ``vllm bench serve`` (random prompts at a fixed request rate, at most a
fixed concurrency) one after the other until it is stopped, each round saving its result JSON; the
totals say how many requests completed and how many failed, with the errors. The rounds run in one
process (tests/helpers/bench_rounds.py: vLLM's own ``vllm bench serve`` code, imported once), so that
requests are on their way the whole time, not only between the imports of a new process per round.
The API key reaches the load generator in its environment (OPENAI_API_KEY), never in its argv. The
command is the one the benchmark builds (plugins/plugin_utils/benchmark/_commands.py: the proxy
variables unset, EOS ignored), with a seed and a result file per round.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from conftest import ROOT

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.benchmark._commands import (
    VllmBenchOptions,
    vllm_bench_argv,
)

VLLM_VENV = ROOT / ".venv" / "vllm"
ROUNDS = Path(__file__).resolve().parent / "bench_rounds.py"
# Each round's prompts (random, of these lengths in tokens).
INPUT_LEN, OUTPUT_LEN = 32, 8


class Traffic:
    def __init__(self, base_url, model, tokenizer, result_dir, key="", prompts=40, concurrency=4, rate=4, ca=None):
        self.base_url, self.model, self.tokenizer = base_url, model, str(tokenizer)
        self.ca = ca  # the CA of an https base_url (SSL_CERT_FILE, as a client of the front door sets it)
        self.result_dir = Path(result_dir)
        self.key, self.prompts, self.concurrency, self.rate = key, prompts, concurrency, rate
        self.stop_file = self.result_dir / "stop"
        self.proc = None

    def argv(self):
        """``vllm bench serve``'s argv as the benchmark builds it, run as rounds in one process."""
        point = {
            "input_len": INPUT_LEN,
            "output_len": OUTPUT_LEN,
            "requests": self.prompts,
            "concurrency": self.concurrency,
            "request_rate": self.rate,
        }
        argv = vllm_bench_argv(
            point,
            {"url": self.base_url, "model": self.model, "tokenizer": self.tokenizer},
            str(VLLM_VENV),
            str(self.result_dir),
            options=VllmBenchOptions(seed=0, result_filename="round-000.json"),
        )
        at = argv.index(str(VLLM_VENV / "bin" / "vllm"))
        assert argv[at + 1 : at + 3] == ["bench", "serve"], argv
        return argv[:at] + [str(VLLM_VENV / "bin" / "python"), str(ROUNDS), str(self.stop_file)] + argv[at + 3 :]

    def start(self):
        self.result_dir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, OPENAI_API_KEY=self.key) if self.key else dict(os.environ)
        if self.ca:
            env["SSL_CERT_FILE"] = str(self.ca)
        env["PYTHONUNBUFFERED"] = "1"  # its log tells when the first round sends
        self.log = open(self.result_dir / "rounds.log", "w")  # noqa: SIM115 - closed in finish
        self.proc = subprocess.Popen(self.argv(), env=env, stdout=self.log, stderr=subprocess.STDOUT)

    def wait_started(self, timeout=300):
        """Until the first round sends its requests (it printed "Starting main benchmark run")."""
        deadline = time.monotonic() + timeout
        log = self.result_dir / "rounds.log"
        while "Starting main benchmark run" not in log.read_text():
            assert self.proc.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "no request sent in %d s:\n%s" % (timeout, log.read_text()[-3000:])
            time.sleep(0.5)

    def finish(self):
        """Stop after the running round; the totals: completed, failed, errors, rounds, broken."""
        self.stop_file.touch()
        try:
            code = self.proc.wait(timeout=900)
        finally:
            self.log.close()
        rounds = [json.loads(p.read_text()) for p in sorted(self.result_dir.glob("round-*.json"))]
        broken = [(p.name, p.read_text()[-2000:]) for p in sorted(self.result_dir.glob("round-*.error"))]
        if code:
            broken.append(("exit %d" % code, (self.result_dir / "rounds.log").read_text()[-2000:]))
        return {
            "completed": sum(r["completed"] for r in rounds),
            "failed": sum(r.get("failed", 0) for r in rounds),
            "errors": [e for r in rounds for e in r.get("errors", []) if e],
            "rounds": len(rounds),
            "broken": broken,
        }
