# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Filters over plugin_utils/benchmark/: the benchmark's target, points, AISBench configuration and gates."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.benchmark._commands import ais_bench_config, commands
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.benchmark._common import BenchmarkError
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.benchmark._gates import Thresholds, gate_list
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.benchmark._points import (
    LengthFit,
    plan_points,
    sweep_concurrencies,
)
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.benchmark._target import TargetSettings, target
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._errors import filter_errors


def _wrap(function):
    return filter_errors(function, errors=(BenchmarkError,))


# The filters' signatures are their public interface (plugins/filter/*.py document each argument,
# and a template may pass them by position): they keep every argument, bundled here for the code.
def _benchmark_target(plan, host="", endpoint="", model="", tokenizer="", max_model_len=0, concurrency=0):  # noqa: PLR0913, PLR0917
    explicit = TargetSettings(
        host=host,
        endpoint=endpoint,
        model=model,
        tokenizer=tokenizer,
        max_model_len=max_model_len,
        concurrency=concurrency,
    )
    return target(plan, explicit)


def _benchmark_points(  # noqa: PLR0913, PLR0917
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
        raise BenchmarkError("benchmark_points needs the benchmark_target result as its input")
    concurrencies = sweep_concurrencies(tgt["concurrency"], sweep or None)
    points = plan_points(
        scenarios,
        tgt["max_model_len"],
        sweep=concurrencies,
        fit=LengthFit(margin=margin, scale=scale, expansion=expansion),
        overrides=overrides or {},
    )
    return commands(points, tgt, vllm_venv, ais_bench_venv, remote_dir)


def _benchmark_ais_config(point, target, api_key=""):
    return ais_bench_config(point, target, api_key)


def _benchmark_gates(  # noqa: PLR0913, PLR0917
    max_failed=0,
    max_ttft_p99_ms=None,
    min_output_throughput=None,
    max_regression_percent=None,
    regression_metrics=(),
    gates=(),
):
    thresholds = Thresholds(
        max_failed=max_failed,
        max_ttft_p99_ms=max_ttft_p99_ms,
        min_output_throughput=min_output_throughput,
        max_regression_percent=max_regression_percent,
        regression_metrics=regression_metrics,
    )
    return gate_list(thresholds, gates or ())


class Filters:
    """kimi_k3.serving benchmark filters."""

    def filters(self):
        return {
            "benchmark_target": _wrap(_benchmark_target),
            "benchmark_points": _wrap(_benchmark_points),
            "benchmark_ais_config": _wrap(_benchmark_ais_config),
            "benchmark_gates": _wrap(_benchmark_gates),
        }
