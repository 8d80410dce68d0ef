# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The fabric_report filter (its code: plugins/plugin_utils/operations/_fabric.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._fabric import Filters

DOCUMENTATION = r"""
name: fabric_report
version_added: 0.4.0
short_description: "Each measured pair against its threshold, and the problems to report"
description:
  - >-
    A pair below fabric_tcp_min_gbps, one whose measurement failed and one that was not measured are
    problems; each problem names the pair, why the plan connects it, the figure and the threshold.
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "What fabric_plan prepared."
    type: dict
    required: true
  measurements:
    description: "The results of kimi_k3.serving.fabric_tcp's measurements (each with its pair)."
    type: list
    elements: dict
    required: true
"""

EXAMPLES = r"""
- name: The report of the fabric check
  ansible.builtin.set_fact:
    fabric_result: "{{ fabric | kimi_k3.serving.fabric_report(measured) }}"
"""

RETURN = r"""
_value:
  description: "results (one per pair: gbps, threshold_gbps, passed, why, error), problems (sentences), lines (a table)."
  type: dict
"""


class FilterModule:
    """kimi_k3.serving.fabric_report."""

    def filters(self):
        return {"fabric_report": Filters().filters()["fabric_report"]}
