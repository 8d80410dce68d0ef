# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The benchmark's summary.md: a table of the points, the comparison with the baseline, and the
gates' failures and the points that did not run."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.benchmark._common import METRICS, fmt

_HEAD = (
    "| point | tool | concurrency | input/output tokens | completed | failed | req/s | output tok/s "
    "| TTFT p50 / p99 ms | TPOT p50 / p99 ms | ITL p99 ms | E2E p50 / p99 ms |"
)


@dataclass(frozen=True)
class Findings:
    """What a run found beside its points: the ``comparison`` rows with the baseline run in
    ``baseline_dir``, the gates' ``failures`` and the ``problems`` (points that did not run)."""

    comparison: tuple | list = ()
    failures: tuple | list = ()
    problems: tuple | list = ()
    baseline_dir: str = ""


def _point_row(p):
    lengths = "%d/%d" % (p["input_len"], p["output_len"])
    if p.get("scaled"):
        lengths += " (scaled from %d/%d)" % (p["requested"]["input_len"], p["requested"]["output_len"])
    return "| %s | %s | %d | %s | %d | %d | %s | %s | %s / %s | %s / %s | %s | %s / %s |" % (
        p["name"],
        p["tool"],
        p["concurrency"],
        lengths,
        p["completed"],
        p["failed"],
        fmt(p["request_throughput"]),
        fmt(p["output_throughput"]),
        fmt(p["ttft_ms"]["p50"]),
        fmt(p["ttft_ms"]["p99"]),
        fmt(p["tpot_ms"]["p50"]),
        fmt(p["tpot_ms"]["p99"]),
        fmt(p["itl_ms"]["p99"]),
        fmt(p["e2el_ms"]["p50"]),
        fmt(p["e2el_ms"]["p99"]),
    )


def _comparison_lines(comparison, baseline_dir):
    lines = ["", "## Against the baseline %s" % baseline_dir, ""]
    lines += ["| point | metric | value | baseline | worse by |", "|---|---|---|---|---|"]
    for row in comparison:
        unit = METRICS[row["metric"]][1]
        change = "-" if row["regression_percent"] is None else "%+.1f%%" % row["regression_percent"]
        lines.append(
            "| %s | %s | %s | %s | %s |"
            % (row["point"], row["metric"], fmt(row["value"], unit), fmt(row["baseline"], unit), change)
        )
    return lines


def summary_markdown(points, run_dir, *, target_info=None, findings=None):
    """The summary.md of a run folder: its normalised ``points``, the endpoint (``target_info``) and
    the ``findings`` (Findings)."""
    findings = findings or Findings()
    lines = ["# Benchmark %s" % os.path.basename(os.path.normpath(str(run_dir))), ""]
    if target_info:
        lines += [
            "Endpoint %s, model %s, load generated from %s."
            % (target_info["url"], target_info["model"], target_info["host"]),
            "",
        ]
    lines += [_HEAD, "|" + "---|" * 12]
    lines += [_point_row(p) for p in points]
    if findings.comparison:
        lines += _comparison_lines(findings.comparison, findings.baseline_dir)
    lines += ["", "## Gates", ""]
    if findings.problems or findings.failures:
        lines += ["- " + text for text in list(findings.problems) + list(findings.failures)]
    else:
        lines.append("Every gate passed.")
    return "\n".join(lines) + "\n"
