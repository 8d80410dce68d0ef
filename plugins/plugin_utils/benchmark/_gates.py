# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The benchmark's judgement: the comparison of a run with a baseline run, the gates (from the
role's threshold variables and benchmark_gates) and their failures, one sentence each."""

from __future__ import annotations

from dataclasses import dataclass

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.benchmark._common import (
    METRICS,
    BenchmarkError,
    fmt,
    metric,
    number,
)

_GATE_KEYS = {"metric", "max", "min", "max_regression_percent", "scenario", "source"}
_LIMITS = ("max", "min", "max_regression_percent")


@dataclass(frozen=True)
class Thresholds:
    """The role's threshold variables (None: no gate): benchmark_max_failed, benchmark_max_ttft_p99_ms,
    benchmark_min_output_throughput, and benchmark_max_regression_percent on each of
    ``regression_metrics`` (benchmark_regression_metrics)."""

    max_failed: float | None = 0
    max_ttft_p99_ms: float | None = None
    min_output_throughput: float | None = None
    max_regression_percent: float | None = None
    regression_metrics: tuple | list | None = ()


def change_percent(metric_name, value, base):
    """How much worse ``value`` is than ``base`` in percent (negative: better); None without a base."""
    if value is None or base is None or not base:
        return None
    better = METRICS[metric_name][0]
    delta = (base - value) if better == "higher" else (value - base)
    return 100.0 * delta / abs(base)


def compare(points, baseline, metrics):
    """Rows (point, metric, value, baseline, regression %) for every point the baseline has too."""
    rows = []
    for point in points:
        base = baseline.get(point["name"])
        if base is None:
            continue
        for name in metrics:
            value, old = metric(point, name), metric(base, name)
            rows.append(
                {
                    "point": point["name"],
                    "metric": name,
                    "value": value,
                    "baseline": old,
                    "regression_percent": change_percent(name, value, old),
                }
            )
    return rows


def _threshold_gates(thresholds):
    gates = []
    if thresholds.max_failed is not None:
        gates.append({"metric": "failed", "max": thresholds.max_failed, "source": "benchmark_max_failed"})
    if thresholds.max_ttft_p99_ms is not None:
        gates.append(
            {"metric": "ttft_ms.p99", "max": thresholds.max_ttft_p99_ms, "source": "benchmark_max_ttft_p99_ms"}
        )
    if thresholds.min_output_throughput is not None:
        gates.append(
            {
                "metric": "output_throughput",
                "min": thresholds.min_output_throughput,
                "source": "benchmark_min_output_throughput",
            }
        )
    if thresholds.max_regression_percent is not None:
        for name in thresholds.regression_metrics or ():
            gates.append(
                {
                    "metric": name,
                    "max_regression_percent": thresholds.max_regression_percent,
                    "source": "benchmark_max_regression_percent",
                }
            )
    return gates


def gate_list(thresholds=None, extra=()):
    """The gates from the role's threshold variables (Thresholds), then ``extra`` (benchmark_gates)."""
    gates = _threshold_gates(thresholds or Thresholds())
    if not isinstance(extra, (list, tuple)):
        raise BenchmarkError("benchmark_gates must be a list of gates, not %r" % (extra,))
    for index, gate in enumerate(extra):
        if isinstance(gate, dict):
            gate = dict(gate, source=gate.get("source") or "benchmark_gates[%d]" % index)
        gates.append(gate)
    return [check_gate(g) for g in gates]


def check_gate(gate):
    """``gate`` with its limit as a number; refused, naming where it came from, unless it is a
    mapping of known keys naming a metric and exactly one limit."""
    if not isinstance(gate, dict):
        raise BenchmarkError(
            "a benchmark gate must be a mapping such as {metric: ttft_ms.p99, max: 2000}, not %r" % (gate,)
        )
    where = gate.get("source", "a gate")
    unknown = sorted(set(gate) - _GATE_KEYS)
    if unknown:
        raise BenchmarkError(
            "%s: a gate has no key %s: its keys are %s" % (where, ", ".join(unknown), ", ".join(sorted(_GATE_KEYS)))
        )
    name = gate.get("metric")
    if name not in METRICS:
        raise BenchmarkError("%s: no benchmark metric %r: the metrics are %s" % (where, name, ", ".join(METRICS)))
    limits = [k for k in _LIMITS if gate.get(k) is not None]
    if len(limits) != 1:
        raise BenchmarkError("%s: a gate on %s needs exactly one of max, min or max_regression_percent" % (where, name))
    out = dict(gate)
    out[limits[0]] = number("%s: %s" % (where, limits[0]), gate[limits[0]])
    return out


def _limit(value, unit=""):
    """A threshold as the user wrote it (2000, 0.5, 1000000000)."""
    text = ("%f" % value).rstrip("0").rstrip(".")
    return text + (" " + unit if unit else "")


def _regression(gate, point, baseline):
    """How much ``point`` regressed beyond a regression gate against ``baseline``, as the middle of
    the failure's sentence; None when it did not (or the baseline has no such point)."""
    name = gate["metric"]
    base = baseline.get(point["name"])
    if base is None:
        return None
    worse = change_percent(name, metric(point, name), metric(base, name))
    if worse is None or worse <= gate["max_regression_percent"]:
        return None
    return "%.1f%% worse than the baseline's %s, above the threshold of %s%% regression" % (
        worse,
        fmt(metric(base, name), METRICS[name][1]),
        _limit(gate["max_regression_percent"]),
    )


def _failure(gate, point, run_dir, *, baseline, baseline_dir):
    """The sentence of ``gate`` failed on ``point``; None when it passes."""
    name = gate["metric"]
    unit = METRICS[name][1]
    value = metric(point, name)
    head = "benchmark gate failed: point %s: %s = %s" % (point["name"], name, fmt(value, unit))
    tail = " (%s); run folder %s" % (gate["source"], run_dir)
    if "max" in gate and value is not None and value > gate["max"]:
        return "%s, above the threshold %s%s" % (head, _limit(gate["max"], unit), tail)
    if "min" in gate and value is not None and value < gate["min"]:
        return "%s, below the threshold %s%s" % (head, _limit(gate["min"], unit), tail)
    if "max_regression_percent" in gate and baseline is not None:
        why = _regression(gate, point, baseline)
        return None if why is None else "%s, %s%s; baseline %s" % (head, why, tail, baseline_dir)
    return None


def apply_gates(points, gates, run_dir, *, baseline=None, baseline_dir=""):
    """The failures, one sentence each naming the point, the metric, its value, the threshold, the
    variable that set it and the run folder (and the baseline's); [] when every gate passes."""
    failures = []
    for gate in gates:
        for point in points:
            if gate.get("scenario") and point["scenario"] != gate["scenario"]:
                continue
            failure = _failure(gate, point, run_dir, baseline=baseline, baseline_dir=baseline_dir)
            if failure is not None:
                failures.append(failure)
    return failures
