# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The decode_graph_max filter (its code: plugins/plugin_utils/filters/_k3.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._k3 import Filters

DOCUMENTATION = r"""
name: decode_graph_max
version_added: 0.1.0
short_description: "Decode CUDA-graph maximum capture size"
description:
  - "The MI355X P/D recipe's formula: G = (K + 1) * C for draft length K."
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "Global client concurrency C."
    type: int
    required: true
  draft_tokens:
    description: "DSpark draft length K."
    type: int
    required: true
"""

EXAMPLES = r"""
- name: 240 for C=48, K=4
  ansible.builtin.debug:
    msg: "{{ 48 | kimi_k3.serving.decode_graph_max(4) }}"
"""

RETURN = r"""
_value:
  description: "max_cudagraph_capture_size of the decode compilation config."
  type: int
"""


class FilterModule:
    """kimi_k3.serving.decode_graph_max."""

    def filters(self):
        return {"decode_graph_max": Filters().filters()["decode_graph_max"]}
