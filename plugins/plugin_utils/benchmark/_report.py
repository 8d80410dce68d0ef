# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The report of a benchmark run folder (the benchmark_report action): each point's raw outputs
normalised, compared with the baseline and gated, then points/<point>.json, summary.md,
summary.json and the plots written."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.benchmark._common import BenchmarkError
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.benchmark._gates import apply_gates, check_gate, compare
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.benchmark._plots import (
    plot_baseline,
    plot_latency,
    plot_throughput,
)
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.benchmark._results import load_points, parse_point
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.benchmark._summary import Findings, summary_markdown

# Compared with the baseline when neither the settings nor a regression gate name metrics.
DEFAULT_REGRESSION_METRICS = ("output_throughput", "ttft_ms.p99", "tpot_ms.p99")


@dataclass(frozen=True)
class ReportSettings:
    """What the report needs beside the run folder and its points: ``results`` (per point name the
    load generator's exit status, {name, rc}), ``gates`` (the benchmark_gates result),
    ``baseline_dir`` (an earlier run folder; '': none), ``target_info`` (the benchmark_target result)
    and ``regression_metrics`` (compared with the baseline; None: the regression gates' metrics, else
    DEFAULT_REGRESSION_METRICS)."""

    results: tuple | list = ()
    gates: tuple | list = ()
    baseline_dir: str = ""
    target_info: dict | None = None
    regression_metrics: tuple | list | None = None


def _write_json(path, data):
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2, sort_keys=True)
        handle.write("\n")


def _measure(run_dir, points, rcs):
    """(normalised points, problems): every point parsed from raw/<point>/, unless its load
    generator exited non-zero (``rcs``: exit status by point name) or its outputs cannot be read
    (then a problem naming it)."""
    problems, done = [], []
    for point in points:
        folder = os.path.join(run_dir, "raw", point["name"])
        if rcs.get(point["name"]) not in (None, 0):
            problems.append(
                "benchmark point failed: %s: %s exited %s (its output: %s/stdout.txt, stderr.txt); run folder %s"
                % (point["name"], point["tool"], rcs[point["name"]], folder, run_dir)
            )
            continue
        try:
            done.append(parse_point(point, folder))
        except BenchmarkError as exc:
            problems.append("benchmark point failed: %s; run folder %s" % (exc, run_dir))
    return done, problems


def _plots(run_dir, done, baseline):
    """The plots of the points that ran (none when none did), with the baseline's when there is one."""
    if not done:
        return []
    plots = [
        plot_throughput(done, os.path.join(run_dir, "throughput.png")),
        plot_latency(done, os.path.join(run_dir, "latency.png")),
    ]
    if baseline:
        plots.append(plot_baseline(done, baseline, os.path.join(run_dir, "baseline.png")))
    return plots


def report(run_dir, points, settings=None):
    """Normalise every point of ``run_dir`` (raw/<point>/), then write points/<point>.json, summary.md,
    summary.json and the plots; the failures of the gates and the points that did not run are returned
    (nothing fails here). ``settings``: ReportSettings."""
    settings = settings or ReportSettings()
    run_dir = os.path.abspath(str(run_dir))
    rcs = {r["name"]: r.get("rc") for r in settings.results or () if isinstance(r, dict) and "name" in r}
    gates = [check_gate(g) for g in settings.gates]
    baseline_dir = settings.baseline_dir
    baseline = load_points(baseline_dir) if baseline_dir else None
    done, problems = _measure(run_dir, points, rcs)
    os.makedirs(os.path.join(run_dir, "points"), exist_ok=True)
    for point in done:
        _write_json(os.path.join(run_dir, "points", point["name"] + ".json"), point)
    metrics = (
        settings.regression_metrics
        or [g["metric"] for g in gates if "max_regression_percent" in g]
        or list(DEFAULT_REGRESSION_METRICS)
    )
    comparison = compare(done, baseline, metrics) if baseline is not None else []
    failures = apply_gates(done, gates, run_dir, baseline=baseline, baseline_dir=baseline_dir)
    plots = _plots(run_dir, done, baseline)
    findings = Findings(comparison=comparison, failures=failures, problems=problems, baseline_dir=baseline_dir)
    summary = summary_markdown(done, run_dir, target_info=settings.target_info, findings=findings)
    with open(os.path.join(run_dir, "summary.md"), "w", encoding="utf-8") as handle:
        handle.write(summary)
    document = {
        "run_dir": run_dir,
        "target": settings.target_info,
        "points": done,
        "baseline": baseline_dir or None,
        "comparison": comparison,
        "gates": gates,
        "failures": failures,
        "problems": problems,
    }
    _write_json(os.path.join(run_dir, "summary.json"), document)
    return dict(document, summary=summary, plots=plots)
