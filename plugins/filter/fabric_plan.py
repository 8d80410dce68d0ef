# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The fabric_plan filter (its code: plugins/plugin_utils/operations/_fabric.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._fabric import Filters

DOCUMENTATION = r"""
name: fabric_plan
version_added: 0.4.0
short_description: "The host pairs the fabric check measures, and the rounds it measures them in"
description:
  - >-
    Every multi-node replica group (its members measured as a ring; both ways for two hosts) and
    every KV-cache path (prefill host to decode host, the way the data flows), from the plan alone.
    Within a round no host is in two pairs, so no measurement shares a link with another.
  - Refuses a setting that is not a positive number, naming it.
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The plan (k3_plan_result.plan)."
    type: dict
    required: true
  settings:
    description: "fabric_port, fabric_tcp_seconds, fabric_tcp_streams, fabric_tcp_min_gbps and fabric_iperf3 (the program, for the commands shown)."
    type: dict
    required: true
  hosts:
    description: "Keep only the pairs whose two hosts are in this list (a --limit); none keeps every pair."
    type: list
    elements: str
"""

EXAMPLES = r"""
- name: The pairs and rounds of the fabric check
  ansible.builtin.set_fact:
    fabric: "{{ plan | kimi_k3.serving.fabric_plan({'fabric_port': 5201, 'fabric_tcp_seconds': 3,
      'fabric_tcp_streams': 4, 'fabric_tcp_min_gbps': 5}) }}"
"""

RETURN = r"""
_value:
  description:
    - "pairs (name, src, dst, why, client, server, server_ip, reverse), rounds (per round, client host to what
      it measures), hosts (every host taking part), servers and settings (the checked numbers) and lines (what runs, for the operator)."
  type: dict
"""


class FilterModule:
    """kimi_k3.serving.fabric_plan."""

    def filters(self):
        return {"fabric_plan": Filters().filters()["fabric_plan"]}
