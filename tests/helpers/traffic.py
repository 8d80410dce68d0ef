"""Steady client load through a deployment's front door with the real ``vllm bench serve``.

``Traffic`` runs rounds of ``vllm bench serve`` (random prompts at a fixed request rate, at most a
fixed concurrency) one after the other, each round saving its result JSON, in one process started
once for all the operations of a test module (tests/helpers/bench_rounds.py: vLLM's own ``vllm
bench serve`` code, imported once). The load is held between operations; ``window()`` lets it go for
one operation, from a round already sending before the operation starts to the end of the round
running when it ends, and its totals say how many requests of those rounds completed and how many
failed, with the errors. The API key reaches the load generator in its environment
(OPENAI_API_KEY), never in its argv. The command is the one the benchmark builds
(plugins/plugin_utils/benchmark/_commands.py: the proxy variables unset, EOS ignored), with a seed
and a result file per round.
"""

from __future__ import annotations

import contextlib
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
        return argv[:at] + [str(VLLM_VENV / "bin" / "python"), str(ROUNDS), str(self.result_dir)] + argv[at + 3 :]

    def start(self):
        """Start the load generator, held: no request until a window lets it go."""
        self.result_dir.mkdir(parents=True, exist_ok=True)
        (self.result_dir / "hold").touch()
        env = dict(os.environ, OPENAI_API_KEY=self.key) if self.key else dict(os.environ)
        if self.ca:
            env["SSL_CERT_FILE"] = str(self.ca)
        env["PYTHONUNBUFFERED"] = "1"  # its log tells when a round sends
        self.log = open(self.result_dir / "rounds.log", "w")  # noqa: SIM115 - closed in stop
        self.proc = subprocess.Popen(self.argv(), env=env, stdout=self.log, stderr=subprocess.STDOUT)

    def _wait(self, done, what, timeout=300):
        deadline = time.monotonic() + timeout
        while not done():
            log = (self.result_dir / "rounds.log").read_text()
            assert self.proc.poll() is None, "the load generator exited:\n" + log[-3000:]
            assert time.monotonic() < deadline, "%s: not within %d s:\n%s" % (what, timeout, log[-3000:])
            time.sleep(0.2)

    def _held(self):
        """The number of the next round while the generator is held, else None."""
        try:
            return int((self.result_dir / "held").read_text())
        except (FileNotFoundError, ValueError):
            return None

    def _sending(self):
        return (self.result_dir / "rounds.log").read_text().count("Starting main benchmark run")

    @contextlib.contextmanager
    def window(self):
        """Requests on their way through the whole block; the totals of its rounds, filled in at its end."""
        self._wait(lambda: self._held() is not None, "the load generator ready")
        first, sending = self._held(), self._sending()
        (self.result_dir / "hold").unlink()
        self._wait(lambda: self._sending() > sending, "the first round sending")
        time.sleep(2)
        totals = {}
        try:
            yield totals
        finally:
            time.sleep(3)
            (self.result_dir / "hold").touch()
            self._wait(lambda: self._held() is not None, "the running round's end", timeout=900)
            totals.update(self.totals(range(first, self._held())))

    def totals(self, indices):
        """completed, failed, errors, rounds and broken (rounds that raised) over these rounds."""
        rounds, broken = [], []
        for index in indices:
            result = self.result_dir / ("round-%03d.json" % index)
            error = result.with_suffix(".error")
            if result.exists():
                rounds.append(json.loads(result.read_text()))
            else:
                broken.append((error.name, error.read_text()[-2000:] if error.exists() else "no result"))
        return {
            "completed": sum(r["completed"] for r in rounds),
            "failed": sum(r.get("failed", 0) for r in rounds),
            "errors": [e for r in rounds for e in r.get("errors", []) if e],
            "rounds": len(rounds) + len(broken),
            "broken": broken,
        }

    def stop(self):
        """End the load generator (after its running round, if any); its exit code."""
        (self.result_dir / "stop").touch()
        try:
            return self.proc.wait(timeout=900)
        finally:
            self.log.close()
