# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""What every part of the benchmark shares: its error, the metrics of a normalised point (which a
gate or a comparison may name), and the checks and formats of numbers.

The benchmark of playbooks/benchmark.yml runs on the controller, one module of this package a job:
_points (scenarios and points), _target (what it runs against), _commands (each point's argv and
AISBench configuration), _results (raw outputs to normalised points), _gates (baseline and gates),
_summary (the markdown), _plots (the PNGs) and _report (the run folder's files). There is no
package that re-exports them: import from the module that does the job. Plain Python (no Ansible
imports); matplotlib only for the plots, imported when they are drawn.
"""

from __future__ import annotations

import math

PERCENTILES = ("mean", "p50", "p90", "p99")
LATENCIES = ("ttft_ms", "tpot_ms", "itl_ms", "e2el_ms")
# Every metric a gate or a comparison may name: (better when, unit, label).
METRICS = {
    "completed": ("higher", "", "completed requests"),
    "failed": ("lower", "", "failed requests"),
    "duration_s": ("lower", "s", "duration"),
    "request_throughput": ("higher", "req/s", "request throughput"),
    "output_throughput": ("higher", "tok/s", "output token throughput"),
    "total_token_throughput": ("higher", "tok/s", "total token throughput"),
}
for _lat in LATENCIES:
    for _p in PERCENTILES:
        METRICS["%s.%s" % (_lat, _p)] = ("lower", "ms", "%s %s" % (_p, _lat[:-3].upper()))
# The file vllm bench serve saves its result to, in the point's folder.
VLLM_RESULT = "result.json"


class BenchmarkError(ValueError):
    """A benchmark setting or a raw output that cannot be used; the message says what and how to fix it."""


def positive_int(what, value):
    """``value`` as a whole number above 0 (a string of one too); refused naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, (int, str, float)):
        raise BenchmarkError("%s must be a whole number above 0, not %r" % (what, value))
    try:
        number = int(str(value).strip())
    except ValueError:
        raise BenchmarkError("%s must be a whole number above 0, not %r" % (what, value)) from None
    if number <= 0:
        raise BenchmarkError("%s must be a whole number above 0, not %r" % (what, value))
    return number


def number(what, value, low=None, high=None):
    """``value`` as a float between ``low`` and ``high`` (None: unbounded); refused naming ``what``."""
    if isinstance(value, bool):
        raise BenchmarkError("%s must be a number, not %r" % (what, value))
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise BenchmarkError("%s must be a number, not %r" % (what, value)) from None
    if math.isnan(out) or (low is not None and out < low) or (high is not None and out > high):
        raise BenchmarkError("%s must be between %s and %s, not %r" % (what, low, high, value))
    return out


def metric(point, name):
    """The value of metric ``name`` (one of METRICS) of a normalised point; None when it has none."""
    if name not in METRICS:
        raise BenchmarkError("no benchmark metric %r: the metrics are %s" % (name, ", ".join(METRICS)))
    if "." in name:
        lat, p = name.split(".")
        return (point.get(lat) or {}).get(p)
    return point.get(name)


def fmt(value, unit=""):
    """A measured value: counts as whole numbers, the rest with two decimals."""
    if value is None:
        return "-"
    text = "%d" % value if isinstance(value, int) or (not unit and float(value).is_integer()) else "%.2f" % value
    return text + (" " + unit if unit else "")
