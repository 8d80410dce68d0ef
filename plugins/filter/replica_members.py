# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The replica_members filter (its code: plugins/plugin_utils/filters/_rolling.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._rolling import Filters

DOCUMENTATION = r"""
name: replica_members
version_added: 0.3.0
short_description: "The services of replica groups, node 0 first"
description:
  - >-
    Every service of the given replica groups with its host, unit, health URL and whether it is
    its group's node 0; node 0 of every group comes before the nodes that join them.
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The plan (k3_plan_result.plan)."
    type: dict
    required: true
  group_ids:
    description: "Replica group ids, as replica_batches gives them."
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
- name: The services of a batch
  ansible.builtin.debug:
    msg: "{{ plan | kimi_k3.serving.replica_members(['k3-sb-dp0/engine']) }}"
"""

RETURN = r"""
_value:
  description: "Mappings with key, host, name, unit, node0, group, url (the health URL, null for followers) and health (the plan's, for health_targets)."
  type: list
  elements: dict
"""


class FilterModule:
    """kimi_k3.serving.replica_members."""

    def filters(self):
        return {"replica_members": Filters().filters()["replica_members"]}
