# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The node_removal filter (its code: plugins/plugin_utils/filters/_rolling.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._rolling import Filters

DOCUMENTATION = r"""
name: node_removal
version_added: 0.3.0
short_description: "What removing engine hosts from a deployment takes away"
description:
  - >-
    The replica groups with a member on the given hosts, every host of those groups (a node of a
    multi-node engine takes its whole engine along), and an outage sentence for each role left
    with no group. A host that runs no engine of the plan is an error naming it and the engine hosts.
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The plan (k3_plan_result.plan)."
    type: dict
    required: true
  nodes:
    description: "The hosts to remove: a list, or one string of comma-separated names."
    type: raw
    required: true
"""

EXAMPLES = r"""
- name: What leaves with decode-2
  ansible.builtin.debug:
    msg: "{{ plan | kimi_k3.serving.node_removal('decode-2') }}"
"""

RETURN = r"""
_value:
  description: "groups (replica group ids), hosts (every host that leaves) and outages (sentences)."
  type: dict
"""


class FilterModule:
    """kimi_k3.serving.node_removal."""

    def filters(self):
        return {"node_removal": Filters().filters()["node_removal"]}
