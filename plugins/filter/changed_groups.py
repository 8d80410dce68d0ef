# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The changed_groups filter (its code: plugins/plugin_utils/filters/_rolling.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._rolling import Filters

DOCUMENTATION = r"""
name: changed_groups
version_added: 0.3.0
short_description: "The replica groups with a service whose files changed"
description:
  - >-
    From the plan and, per host, the services whose unit, environment or configuration files an
    install changed (the engine role's C(staged) state records them as C(service_unit_staged)):
    the replica groups they belong to, in plan order. A group restarts whole, so one changed
    member (a follower, say) takes its node 0 along.
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The plan (k3_plan_result.plan)."
    type: dict
    required: true
  changed:
    description: "Host name to the names of its changed services."
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: The groups an upgrade restarts
  ansible.builtin.debug:
    msg: "{{ plan | kimi_k3.serving.changed_groups({'decode-1': ['decode']}) }}"
"""

RETURN = r"""
_value:
  description: "Replica group ids (node 0's host/service)."
  type: list
  elements: str
"""


class FilterModule:
    """kimi_k3.serving.changed_groups."""

    def filters(self):
        return {"changed_groups": Filters().filters()["changed_groups"]}
