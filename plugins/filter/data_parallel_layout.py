# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The data_parallel_layout filter (its code: plugins/plugin_utils/filters/_k3.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._k3 import Filters

DOCUMENTATION = r"""
name: data_parallel_layout
version_added: 0.1.0
short_description: "Ranks of a multi-node data-parallel engine"
description:
  - "For the nodes in order (node 0 first), each node's DP start rank, its ranks, the DP size, the address (node 0's) and the RPC port."
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "Node addresses, node 0 first."
    type: list
    required: true
  local_size:
    description: "DP ranks per node."
    type: int
    required: true
  rpc_port:
    description: "The DP RPC port."
    type: int
    required: true
"""

EXAMPLES = r"""
- name: Start ranks 0, 8, 16 for three 8-GPU DEP nodes
  ansible.builtin.debug:
    msg: "{{ ['10.0.0.1', '10.0.0.2', '10.0.0.3'] | kimi_k3.serving.data_parallel_layout(8, 13345) | map(attribute='dp_start_rank') }}"
"""

RETURN = r"""
_value:
  description: "One entry per node."
  type: list
"""


class FilterModule:
    """kimi_k3.serving.data_parallel_layout."""

    def filters(self):
        return {"data_parallel_layout": Filters().filters()["data_parallel_layout"]}
