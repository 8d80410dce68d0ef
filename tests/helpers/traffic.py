"""Bounded client load through a deployment's front door with the real ``vllm bench serve``.

``Traffic`` runs rounds of ``vllm bench serve`` (random prompts, a fixed concurrency) one after
the other in a thread until it is stopped, each round saving its result JSON; the totals say how
many requests completed and how many failed, with the errors. The API key reaches the load
generator in its environment (OPENAI_API_KEY), never in its argv. The command is the one the
benchmark builds (plugins/plugin_utils/benchmark/_commands.py: the proxy variables unset, EOS
ignored), with a seed and a result file per round.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path

from conftest import ROOT

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.benchmark._commands import (
    VllmBenchOptions,
    vllm_bench_argv,
)

VLLM_VENV = ROOT / ".venv" / "vllm"
# Each round's prompts (random, of these lengths in tokens); request_rate 0: as fast as the
# concurrency lets them go.
INPUT_LEN, OUTPUT_LEN = 32, 8


class Traffic(threading.Thread):
    def __init__(self, base_url, model, tokenizer, result_dir, key="", prompts=40, concurrency=4, ca=None):
        super().__init__(daemon=True)
        self.base_url, self.model, self.tokenizer = base_url, model, str(tokenizer)
        self.ca = ca  # the CA of an https base_url (SSL_CERT_FILE, as a client of the front door sets it)
        self.result_dir = Path(result_dir)
        self.key, self.prompts, self.concurrency = key, prompts, concurrency
        self.stop = threading.Event()
        self.rounds = []
        self.broken = []

    def one_round(self, index):
        name = "round-%03d.json" % index
        env = dict(os.environ, OPENAI_API_KEY=self.key) if self.key else dict(os.environ)
        if self.ca:
            env["SSL_CERT_FILE"] = str(self.ca)
        point = {
            "input_len": INPUT_LEN,
            "output_len": OUTPUT_LEN,
            "requests": self.prompts,
            "concurrency": self.concurrency,
            "request_rate": 0,
        }
        argv = vllm_bench_argv(
            point,
            {"url": self.base_url, "model": self.model, "tokenizer": self.tokenizer},
            str(VLLM_VENV),
            str(self.result_dir),
            options=VllmBenchOptions(seed=index, result_filename=name),
        )
        proc = subprocess.run(
            argv,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        path = self.result_dir / name
        if proc.returncode or not path.exists():
            self.broken.append((index, proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:]))
            return
        self.rounds.append(json.loads(path.read_text()))

    def run(self):
        index = 0
        while not self.stop.is_set():
            self.one_round(index)
            index += 1

    def finish(self):
        """Stop after the running round; the totals: completed, failed, errors, rounds."""
        self.stop.set()
        self.join()
        return {
            "completed": sum(r["completed"] for r in self.rounds),
            "failed": sum(r.get("failed", 0) for r in self.rounds),
            "errors": [e for r in self.rounds for e in r.get("errors", []) if e],
            "rounds": len(self.rounds),
            "broken": self.broken,
        }
