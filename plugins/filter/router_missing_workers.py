# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The router_missing_workers filter (its code: plugins/plugin_utils/filters/_rolling.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._rolling import Filters

DOCUMENTATION = r"""
name: router_missing_workers
version_added: 0.3.0
short_description: "The planned workers a router's GET /workers answer lacks"
description:
  - >-
    From the results of a loop over router_registrations (loop variable C(router_reg)) that read
    each router's C(GET /workers) (C(json)): one pair of registration and worker per planned
    worker the router does not list, to register with C(POST /workers).
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The loop's registered results."
    type: list
    elements: dict
    required: true
"""

EXAMPLES = r"""
- name: Register what is missing
  ansible.builtin.debug:
    msg: "{{ listed.results | kimi_k3.serving.router_missing_workers }}"
"""

RETURN = r"""
_value:
  description: "Pairs [registration, worker]."
  type: list
  elements: list
"""


class FilterModule:
    """kimi_k3.serving.router_missing_workers."""

    def filters(self):
        return {"router_missing_workers": Filters().filters()["router_missing_workers"]}
