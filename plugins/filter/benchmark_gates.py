# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The benchmark_gates filter (its code: plugins/plugin_utils/filters/_benchmark.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._benchmark import Filters

DOCUMENTATION = r"""
name: benchmark_gates
version_added: 0.4.0
short_description: "The benchmark's gates from its threshold variables"
description:
  - >-
    One gate per threshold that is set (failed requests, p99 TTFT, output throughput, and a
    regression against the baseline in percent on each of O(regression_metrics)), then O(gates).
  - >-
    A gate names a C(metric) (completed, failed, duration_s, request_throughput, output_throughput,
    total_token_throughput, or ttft_ms, tpot_ms, itl_ms, e2el_ms with .mean, .p50, .p90 or .p99) and
    exactly one of C(max), C(min) or C(max_regression_percent); C(scenario) limits it to that
    scenario's points. Refuses an unknown metric or key, and a gate without exactly one limit.
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The most failed requests a point may have (null: no gate)."
    type: int
    required: true
  max_ttft_p99_ms:
    description: "The highest p99 TTFT in milliseconds (null: no gate)."
    type: float
  min_output_throughput:
    description: "The lowest output throughput in tokens per second (null: no gate)."
    type: float
  max_regression_percent:
    description: "How much worse than the baseline a metric may be, in percent (null: no gate)."
    type: float
  regression_metrics:
    description: "The metrics the regression gate checks."
    type: list
    elements: str
  gates:
    description: "More gates ({metric, max | min | max_regression_percent, scenario})."
    type: list
    elements: dict
"""

EXAMPLES = r"""
- name: No failed request, p99 TTFT under 2 s
  ansible.builtin.set_fact:
    gates: "{{ 0 | kimi_k3.serving.benchmark_gates(max_ttft_p99_ms=2000) }}"
"""

RETURN = r"""
_value:
  description: "The gates: metric, one limit, source (the variable that set it), scenario."
  type: list
  elements: dict
"""


class FilterModule:
    """kimi_k3.serving.benchmark_gates."""

    def filters(self):
        return {"benchmark_gates": Filters().filters()["benchmark_gates"]}
