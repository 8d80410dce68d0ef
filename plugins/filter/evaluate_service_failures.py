# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The evaluate_service_failures filter (its code: plugins/plugin_utils/filters/_evaluate.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._evaluate import Filters

DOCUMENTATION = r"""
name: evaluate_service_failures
version_added: 0.4.0
short_description: "The failed checks of the service check, one message each"
description:
  - >-
    Reads the JSON the service check (kimi_evals/service_check.py) prints: C(/v1/models) lists the
    served name, the benchmarks' max tokens fit max_model_len, sampling, max_tokens, top_p and
    reasoning_effort are honoured or validated, streaming, tools, images and reasoning.
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The check's output (text or parsed)."
    type: raw
    required: true
"""

EXAMPLES = r"""
- name: The service passes
  ansible.builtin.assert:
    that: failures | length == 0
    fail_msg: "{{ failures }}"
  vars:
    failures: "{{ check.stdout | kimi_k3.serving.evaluate_service_failures }}"
"""

RETURN = r"""
_value:
  description: "The messages; empty when every check passed."
  type: list
  elements: str
"""


class FilterModule:
    """kimi_k3.serving.evaluate_service_failures."""

    def filters(self):
        return {"evaluate_service_failures": Filters().filters()["evaluate_service_failures"]}
