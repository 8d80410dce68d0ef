#!/usr/bin/python
# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Documentation of the kimi_k3.serving.benchmark_report action (the work: plugins/action/benchmark_report.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: benchmark_report
short_description: Normalise a benchmark run folder, write its summary and plots, apply its gates
version_added: 0.4.0
description:
  - Reads the raw outputs of every point fetched into O(run_dir)C(/raw/<point>/) (C(vllm bench serve)'s
    C(result.json); AISBench's C(performances/<model>/<dataset>.csv) and C(.json)) and writes one normalised
    JSON per point under C(points/) (throughput, TTFT/TPOT/ITL/E2E mean, p50, p90 and p99 in milliseconds,
    completed, failed), C(summary.md) (a markdown table), C(summary.json), and the plots C(throughput.png)
    and C(latency.png) (against concurrency), plus C(baseline.png) with a O(baseline).
  - Applies the gates and returns every failure as a sentence naming the point, the metric, its value, the
    threshold, the variable that set it and the run folder; a point whose tool failed or wrote nothing is
    named in C(problems). The task itself does not fail for them, so the summary can be shown first.
  - Runs on the controller only. Needs matplotlib on the controller for the plots.
options:
  run_dir:
    description: The run folder on the controller.
    type: path
    required: true
  points:
    description: The points of the run (the benchmark_points result).
    type: list
    elements: dict
    required: true
  results:
    description:
      - The registered results of the task that ran the points (each with C(item.name) and C(rc)), or a list
        of C({name, rc}). A point with an exit status other than 0 is a problem.
    type: list
    elements: dict
  gates:
    description: The gates (the benchmark_gates result).
    type: list
    elements: dict
  baseline:
    description: The folder of an earlier run to compare with (its C(points/)); empty for none.
    type: path
  target:
    description: The benchmark_target result, recorded in the summary.
    type: dict
  regression_metrics:
    description: The metrics of the comparison with the baseline (default those of the regression gates).
    type: list
    elements: str
attributes:
  check_mode:
    support: none
    description: In check mode no benchmark ran; the task is skipped.
  diff_mode:
    support: none
    description: The report files are written whole; no diff is shown.
  idempotent:
    support: none
    description: Every run writes its own run folder.
author:
  - kimi_k3.serving maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Report the run
  kimi_k3.serving.benchmark_report:
    run_dir: benchmarks/20260101T000000Z
    points: "{{ benchmark_run.points }}"
    results: "{{ benchmark_runs.results }}"
    gates: "{{ benchmark_run.gates }}"
  register: benchmark_report
"""

RETURN = r"""
summary:
  description: The markdown summary (also written to summary.md).
  returned: success
  type: str
points:
  description: The normalised points.
  returned: success
  type: list
  elements: dict
failures:
  description: The failed gates, each naming the point, metric, value, threshold, variable and run folder.
  returned: success
  type: list
  elements: str
problems:
  description: The points that did not run or wrote no result.
  returned: success
  type: list
  elements: str
comparison:
  description: Per point and metric, the value, the baseline's and the regression in percent.
  returned: success
  type: list
  elements: dict
plots:
  description: The PNG files written.
  returned: success
  type: list
  elements: str
run_dir:
  description: The run folder (absolute).
  returned: success
  type: str
"""
