# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The evaluate_table filter (its code: plugins/plugin_utils/filters/_evaluate.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._evaluate import Filters

DOCUMENTATION = r"""
name: evaluate_table
version_added: 0.4.0
short_description: "The scores as an aligned text table"
description:
  - "One line per benchmark: accuracy, standard error, samples completed, gate and verdict."
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The results of kimi_k3.serving.evaluate_scores."
    type: list
    elements: dict
    required: true
  gates:
    description: "Benchmark to minimum accuracy."
    type: dict
"""

EXAMPLES = r"""
- name: Show the scores
  ansible.builtin.debug:
    msg: "{{ scores | kimi_k3.serving.evaluate_table(gates) }}"
"""

RETURN = r"""
_value:
  description: "The lines, a header first."
  type: list
  elements: str
"""


class FilterModule:
    """kimi_k3.serving.evaluate_table."""

    def filters(self):
        return {"evaluate_table": Filters().filters()["evaluate_table"]}
