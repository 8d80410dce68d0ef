# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The replica_batches filter (its code: plugins/plugin_utils/filters/_rolling.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._rolling import Filters

DOCUMENTATION = r"""
name: replica_batches
version_added: 0.3.0
short_description: "The replica groups of a plan and the batches a rolling operation takes them in"
description:
  - >-
    A replica group is what can restart alone: a vLLM engine with the nodes that join its node 0
    (headless followers, the other nodes of a multi-node engine). Batches take O(serial) groups at a
    time, alternating roles. Outages name each role that cannot roll without stopping: one with a
    single group, or a batch size that takes all of its groups at once.
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The plan (k3_plan_result.plan)."
    type: dict
    required: true
  serial:
    description: "Replica groups per batch."
    type: int
    default: 1
  only:
    description:
      - >-
        Roll only these replica groups (ids; upgrade.yml passes those whose files changed). Their
        roles' other groups keep serving; none (the default) rolls every group.
    type: list
    elements: str
"""

EXAMPLES = r"""
- name: The batches, two groups at a time
  ansible.builtin.debug:
    msg: "{{ plan | kimi_k3.serving.replica_batches(2) }}"
"""

RETURN = r"""
_value:
  description: "groups (id, role, members, hosts, url, fronts), batches (lists of group ids) and outages (sentences)."
  type: dict
"""


class FilterModule:
    """kimi_k3.serving.replica_batches."""

    def filters(self):
        return {"replica_batches": Filters().filters()["replica_batches"]}
