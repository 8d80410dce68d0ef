"""The specification's performance and accuracy procedures against the deployed sandbox.

playbooks/benchmark.yml plans, then runs the real ``vllm bench serve`` (one short sweep point)
and the real AISBench (the specification's 8K/1K scenario, scaled to the sandbox's 512 tokens)
on the plan's front-door host k3-sb-front, through the router with the deployment's API key; the
run folder comes back to the controller. playbooks/evaluate.yml runs the service check and
ToolCall (inspect-ai from the controller) through the router. The full default runs are what
make sandbox does; tests/integration covers the scenarios, gates and failure paths on localhost.
Needs root; the deployment is tests/helpers/cluster_sandbox.py's.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from conftest import ROOT
from helpers.sandbox_run import playbook

# The benchmark and the evaluation only send requests: the deployment is left as it was.
LEAVES_CONVERGED = True
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox needs root")

EVAL_PYTHON = ROOT / ".venv" / "eval" / "bin" / "python"


def no_key_in(folder, keys):
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert not any(key.encode() in data for key in keys), path


def test_benchmark_runs_from_the_front_host_through_the_router(cluster, tmp_path):
    settings = tmp_path / "bench.json"
    settings.write_text(
        json.dumps(
            {
                "benchmark_scenarios": ["spec-8k-1k", "sweep"],
                "benchmark_sweep_concurrencies": [2],
                "benchmark_results_dir": str(tmp_path / "benchmarks"),
                "benchmark_run_name": "sandbox",
            }
        )
    )
    out = playbook("playbooks/benchmark.yml", "-e", "@%s" % settings)
    assert "load generated from k3-sb-front" in out.stdout
    run = tmp_path / "benchmarks" / "sandbox"
    summary = json.loads((run / "summary.json").read_text())
    assert [p["name"] for p in summary["points"]] == ["spec-8k-1k-c4", "sweep-c2"]
    for point in summary["points"]:
        assert point["completed"] == point["requests"] > 0 and point["failed"] == 0, point
        assert point["output_throughput"] > 0 and point["ttft_ms"]["p99"] > 0, point
    assert summary["failures"] == []
    assert (run / "throughput.png").stat().st_size > 10_000 and (run / "latency.png").is_file()
    assert "https://10.77.0.11:8443" in (run / "summary.md").read_text()
    no_key_in(run, cluster["every_key"])
    assert not any(key in out.stdout + out.stderr for key in cluster["every_key"])


def test_evaluate_checks_the_service_and_scores_toolcall_through_the_router(cluster, tmp_path):
    datasets = tmp_path / "datasets"
    subprocess.run([str(EVAL_PYTHON), str(ROOT / "tools" / "eval_datasets.py"), str(datasets)], check=True)
    settings = tmp_path / "eval.json"
    settings.write_text(
        json.dumps(
            {
                "evaluate_datasets": {"toolcall": str(datasets / "toolcall" / "toolcall_samples.jsonl")},
                "evaluate_runs_dir": str(tmp_path / "evaluations"),
                "evaluate_run_name": "sandbox",
                "evaluate_gates": {"toolcall": 0},
            }
        )
    )
    out = playbook("playbooks/evaluate.yml", "-e", "@%s" % settings)
    text = " ".join(out.stdout.split())
    assert "service check passed: models, max_model_len, sampling, max_tokens, top_p_validated," in text
    assert "effort_validated, stream, tools" in text
    run = tmp_path / "evaluations" / "sandbox"
    scores = json.loads((run / "scores.json").read_text())
    assert scores["endpoint"] == "https://10.77.0.11:8443" and scores["gates"] == {"toolcall": 0}
    (toolcall,) = scores["scores"]
    assert (toolcall["benchmark"], toolcall["status"]) == ("toolcall", "success"), toolcall
    assert toolcall["samples"] == toolcall["completed"] == 4 and 0 <= toolcall["accuracy"] <= 1, toolcall
    assert list((run / "toolcall").glob("*.eval"))
    no_key_in(run, cluster["every_key"])
