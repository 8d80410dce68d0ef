# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The evaluate_newest_logs filter (its code: plugins/plugin_utils/filters/_evaluate.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._evaluate import Filters

DOCUMENTATION = r"""
name: evaluate_newest_logs
version_added: 0.4.0
short_description: "The newest inspect log of each benchmark"
description:
  - >-
    From the registered results of an ansible.builtin.find per benchmark run (item = the run of
    kimi_k3.serving.evaluate_runs), the newest C(.eval) or C(.json) log of each. A benchmark that
    wrote no log fails, naming it, its folder and how inspect ended (from the registered runs).
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The registered find results (the loop's C(results), or the registered variable)."
    type: raw
    required: true
  runs_results:
    description: "The registered inspect runs, for the error message."
    type: raw
"""

EXAMPLES = r"""
- name: The logs
  ansible.builtin.set_fact:
    logs: "{{ found | kimi_k3.serving.evaluate_newest_logs(ran) }}"
"""

RETURN = r"""
_value:
  description: "One mapping per benchmark: benchmark, title, log (its path)."
  type: list
  elements: dict
"""


class FilterModule:
    """kimi_k3.serving.evaluate_newest_logs."""

    def filters(self):
        return {"evaluate_newest_logs": Filters().filters()["evaluate_newest_logs"]}
