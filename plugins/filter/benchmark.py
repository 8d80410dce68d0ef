# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Filters over plugin_utils/_benchmark.py: the benchmark's target, points, AISBench configuration and gates."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.kimi_k3.serving.plugins.plugin_utils import _benchmark


def _wrap(function):
    def call(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except _benchmark.BenchmarkError as exc:
            raise AnsibleFilterError(str(exc)) from None

    call.__name__ = function.__name__
    call.__doc__ = function.__doc__
    return call


def _benchmark_target(plan, host="", endpoint="", model="", tokenizer="", max_model_len=0, concurrency=0):
    return _benchmark.target(plan, host, endpoint, model, tokenizer, max_model_len, concurrency)


def _benchmark_points(
    tgt,
    scenarios,
    sweep=None,
    margin=64,
    scale=True,
    overrides=None,
    vllm_venv="",
    ais_bench_venv="",
    remote_dir="",
    expansion=0.3,
):
    if not isinstance(tgt, dict) or "url" not in tgt:
        raise _benchmark.BenchmarkError("benchmark_points needs the benchmark_target result as its input")
    concurrencies = _benchmark.sweep_concurrencies(tgt["concurrency"], sweep or None)
    points = _benchmark.plan_points(
        scenarios,
        tgt["max_model_len"],
        sweep=concurrencies,
        margin=margin,
        scale=scale,
        overrides=overrides or {},
        expansion=expansion,
    )
    return _benchmark.commands(points, tgt, vllm_venv, ais_bench_venv, remote_dir)


def _benchmark_ais_config(point, target, api_key=""):
    return _benchmark.ais_bench_config(point, target, api_key)


def _benchmark_gates(
    max_failed=0,
    max_ttft_p99_ms=None,
    min_output_throughput=None,
    max_regression_percent=None,
    regression_metrics=(),
    gates=(),
):
    return _benchmark.gate_list(
        max_failed, max_ttft_p99_ms, min_output_throughput, max_regression_percent, regression_metrics, gates or ()
    )


class FilterModule:
    """kimi_k3.serving benchmark filters."""

    def filters(self):
        return {
            "benchmark_target": _wrap(_benchmark_target),
            "benchmark_points": _wrap(_benchmark_points),
            "benchmark_ais_config": _wrap(_benchmark_ais_config),
            "benchmark_gates": _wrap(_benchmark_gates),
        }
