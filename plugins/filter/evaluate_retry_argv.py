# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The evaluate_retry_argv filter (its code: plugins/plugin_utils/filters/_evaluate.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._evaluate import Filters

DOCUMENTATION = r"""
name: evaluate_retry_argv
version_added: 0.4.0
short_description: "The inspect eval-retry command line of a run that did not finish"
description:
  - "C(inspect eval-retry LOG) writing into the log's own folder, with the evaluation's connection limit."
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The log file of the unfinished run."
    type: str
    required: true
  inspect:
    description: "The inspect program."
    type: str
    required: true
  max_connections:
    description: "Concurrent connections to the endpoint."
    type: int
    default: 16
"""

EXAMPLES = r"""
- name: Retry
  ansible.builtin.command:
    argv: "{{ log | kimi_k3.serving.evaluate_retry_argv('/opt/eval/bin/inspect') }}"
"""

RETURN = r"""
_value:
  description: "The argv."
  type: list
  elements: str
"""


class FilterModule:
    """kimi_k3.serving.evaluate_retry_argv."""

    def filters(self):
        return {"evaluate_retry_argv": Filters().filters()["evaluate_retry_argv"]}
