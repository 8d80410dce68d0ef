# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The evaluate_unfinished filter (its code: plugins/plugin_utils/filters/_evaluate.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._evaluate import Filters

DOCUMENTATION = r"""
name: evaluate_unfinished
version_added: 0.4.0
short_description: "The benchmarks whose inspect run did not finish"
description:
  - "The results of kimi_k3.serving.evaluate_scores whose status is not success (error, cancelled, started): the ones to C(inspect eval-retry)."
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The results of kimi_k3.serving.evaluate_scores."
    type: list
    elements: dict
    required: true
"""

EXAMPLES = r"""
- name: Retry what did not finish
  ansible.builtin.command:
    argv: "{{ item.log | kimi_k3.serving.evaluate_retry_argv(inspect) }}"
  loop: "{{ scores | kimi_k3.serving.evaluate_unfinished }}"
"""

RETURN = r"""
_value:
  description: "The unfinished results."
  type: list
  elements: dict
"""


class FilterModule:
    """kimi_k3.serving.evaluate_unfinished."""

    def filters(self):
        return {"evaluate_unfinished": Filters().filters()["evaluate_unfinished"]}
