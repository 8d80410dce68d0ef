# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The front_actions filter (its code: plugins/plugin_utils/filters/_rolling.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._rolling import Filters

DOCUMENTATION = r"""
name: front_actions
version_added: 0.3.0
short_description: "How each front door lets go of replica groups and takes them back"
description:
  - >-
    Per front door and group: C(igw) for a vllm-router that takes workers at runtime
    (C(DELETE /workers/<url>), later C(POST /workers)), C(static) for a vllm-router with a fixed
    worker list (C(/remove_worker); the worker comes back only when the router restarts), C(none)
    for a front service the collection cannot tell (the group simply restarts).
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The plan (k3_plan_result.plan)."
    type: dict
    required: true
  group_ids:
    description: "Replica group ids (their node 0's host/name), as replica_batches gives them."
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
- name: What the front doors do for this batch
  ansible.builtin.debug:
    msg: "{{ plan | kimi_k3.serving.front_actions(['k3-sb-decode/decode']) }}"
"""

RETURN = r"""
_value:
  description: "Mappings with group, front, front_host, front_unit, front_url, front_health, mode, worker_url, worker_path, worker_type and model_id."
  type: list
  elements: dict
"""


class FilterModule:
    """kimi_k3.serving.front_actions."""

    def filters(self):
        return {"front_actions": Filters().filters()["front_actions"]}
