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
    host, its followers' states: the C(unit_states) that the service_units module returned in the node 0 phase
    there, or the output of C(systemctl is-active) over that host's follower engines (in the order
    C(host_services(host, kind='vllm', followers=true)) gives them). Returns the names of this host's node 0
    engines that one of those followers starts after and that is neither active, activating nor reloading.
  - >-
    A host whose states are missing (not read, e.g. outside C(--limit)) restarts nothing; nor does a node 0
    unit this run already started or restarted (O(started)).
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
      Host name to the service_units result of its node 0 phase (C(unit_states)), or to what a
      C(systemctl is-active) task registered there (the result, its C(stdout_lines) or its C(stdout)).
    type: dict
    required: true
  started:
    description: "The units of this host that this run already started or restarted."
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Node 0 engines whose followers are down
  ansible.builtin.set_fact:
    engine_restart: >-
      {{ engine_plan | kimi_k3.serving.node0_restarts(inventory_hostname,
           dict(ansible_play_hosts_all | zip(ansible_play_hosts_all | map('extract', hostvars)
                | map(attribute='service_unit_applied', default={}) | list)),
           service_unit_applied.started + service_unit_applied.restarted) }}
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
