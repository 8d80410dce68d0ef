# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The metric_sum filter (its code: plugins/plugin_utils/filters/_metrics.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._metrics import Filters

DOCUMENTATION = r"""
name: metric_sum
version_added: 0.1.0
short_description: "Sum a counter of a Prometheus /metrics page"
description:
  - "Adds up every sample of a metric whose labels include the given ones (0.0 when there is none)."
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The text of a /metrics page."
    type: str
    required: true
  name:
    description: "The metric name, e.g. vllm:prompt_tokens_by_source_total."
    type: str
    required: true
  labels:
    description: "Labels a sample must carry, e.g. {source: external_kv_transfer}."
    type: dict
    required: false
"""

EXAMPLES = r"""
- name: Prompt tokens a decode engine received through the KV connector
  ansible.builtin.debug:
    msg: "{{ metrics.content | kimi_k3.serving.metric_sum('vllm:prompt_tokens_by_source_total', {'source': 'external_kv_transfer'}) }}"
"""

RETURN = r"""
_value:
  description: "The sum."
  type: float
"""


class FilterModule:
    """kimi_k3.serving.metric_sum."""

    def filters(self):
        return {"metric_sum": Filters().filters()["metric_sum"]}
