# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The evaluate_kept_logs filter (its code: plugins/plugin_utils/filters/_evaluate.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._evaluate import Filters

DOCUMENTATION = r"""
name: evaluate_kept_logs
version_added: 0.4.0
short_description: "Each result with the path of its log's copy in the run folder"
description:
  - "Adds C(kept), C(RUN_DIR/<benchmark>/<log file name>): where the controller keeps the log (fetched from a remote evaluation host, or written there)."
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The results of kimi_k3.serving.evaluate_scores."
    type: list
    elements: dict
    required: true
  run_dir:
    description: "The run folder on the controller."
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Where the logs are kept
  ansible.builtin.set_fact:
    scores: "{{ scores | kimi_k3.serving.evaluate_kept_logs('/srv/evaluations/20260101T000000Z') }}"
"""

RETURN = r"""
_value:
  description: "The results, each with kept."
  type: list
  elements: dict
"""


class FilterModule:
    """kimi_k3.serving.evaluate_kept_logs."""

    def filters(self):
        return {"evaluate_kept_logs": Filters().filters()["evaluate_kept_logs"]}
