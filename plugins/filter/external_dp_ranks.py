# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The external_dp_ranks filter (its code: plugins/plugin_utils/filters/_k3.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._k3 import Filters

DOCUMENTATION = r"""
name: external_dp_ranks
version_added: 0.1.0
short_description: "The engines launch_online_dp.py starts on one node"
description:
  - "For each local DP rank i: the devices i*tp..i*tp+tp-1, the port start + i and the global rank rank_start + i."
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The vLLM start port."
    type: int
    required: true
  dp_size:
    description: "Global DP size."
    type: int
    required: true
  dp_rank_start:
    description: "This node's first global rank."
    type: int
    required: true
  dp_size_local:
    description: "DP ranks on this node."
    type: int
    required: true
  tp_size:
    description: "Tensor-parallel size."
    type: int
    required: true
"""

EXAMPLES = r"""
- name: One DP8/TP16 rank per A3 node
  ansible.builtin.debug:
    msg: "{{ 9000 | kimi_k3.serving.external_dp_ranks(8, 3, 1, 16) }}"
"""

RETURN = r"""
_value:
  description: "One entry per local rank with local_rank, dp_rank, port and devices."
  type: list
"""


class FilterModule:
    """kimi_k3.serving.external_dp_ranks."""

    def filters(self):
        return {"external_dp_ranks": Filters().filters()["external_dp_ranks"]}
