# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The evaluate_scores filter (its code: plugins/plugin_utils/filters/_evaluate.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._evaluate import Filters

DOCUMENTATION = r"""
name: evaluate_scores
version_added: 0.4.0
short_description: "Each benchmark's result, read from its inspect log header"
description:
  - >-
    Reads the header of each benchmark's log as C(inspect log dump --header-only) prints it (or
    a JSON log): status, accuracy and its standard error, samples total and completed. A header
    of another task, or a finished run without an accuracy, is refused.
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "A list of mappings: benchmark, header (the dumped JSON, text or parsed), log (its path)."
    type: list
    elements: dict
    required: true
"""

EXAMPLES = r"""
- name: Scores
  ansible.builtin.set_fact:
    scores: "{{ [{'benchmark': 'ocrbench', 'header': dumped.stdout, 'log': path}] | kimi_k3.serving.evaluate_scores }}"
"""

RETURN = r"""
_value:
  description: "One mapping per benchmark: benchmark, title, status, accuracy, stderr, scorer, samples, completed, log, error."
  type: list
  elements: dict
"""


class FilterModule:
    """kimi_k3.serving.evaluate_scores."""

    def filters(self):
        return {"evaluate_scores": Filters().filters()["evaluate_scores"]}
