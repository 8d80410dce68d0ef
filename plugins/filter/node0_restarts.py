# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The node0_restarts filter (its code: plugins/plugin_utils/filters/_host_services.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._host_services import Filters

DOCUMENTATION = r"""
name: node0_restarts
version_added: 0.1.0
short_description: "The node 0 engines of a host to restart because a follower of theirs is down"
description:
  - >-
    A headless follower that stopped cannot rejoin a running node 0: node 0 restarts with it. Reads, for every
    host, the output of C(systemctl is-active) over that host's follower engines (in the order
    C(host_services(host, kind='vllm', followers=true)) gives them) and returns the names of this host's node 0
    engines that one of those followers starts after and that is neither active, activating nor reloading.
  - >-
    A host whose states are missing (not read, e.g. outside C(--limit)) restarts nothing.
  - "Refuses a missing plan and a plan of another version, as host_services does."
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The plan (C(k3_plan_result.plan) of the plan stage)."
    type: dict
    required: true
  host:
    description: "The inventory host whose node 0 engines are decided."
    type: str
    required: true
  follower_states:
    description: >-
      Host name to what the C(systemctl is-active) task registered there (the result, its C(stdout_lines) or its
      C(stdout)).
    type: dict
    required: true
  read_before:
    description: >-
      Host name to the same states read by an earlier stage of the run (M(kimi_k3.serving.preflight_host)'s
      C(unit_states)), taken for a host whose entry in O(follower_states) holds none.
    type: dict
"""

EXAMPLES = r"""
- name: Node 0 engines whose followers are down
  ansible.builtin.set_fact:
    engine_restart: >-
      {{ engine_plan | kimi_k3.serving.node0_restarts(inventory_hostname,
           dict(ansible_play_hosts_all | zip(ansible_play_hosts_all | map('extract', hostvars)
                | map(attribute='engine_follower_state', default={}) | list))) }}
"""

RETURN = r"""
_value:
  description: "Names of this host's node 0 engines to restart (empty when every follower runs)."
  type: list
  elements: str
"""


class FilterModule:
    """kimi_k3.serving.node0_restarts."""

    def filters(self):
        return {"node0_restarts": Filters().filters()["node0_restarts"]}
