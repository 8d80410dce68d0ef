# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The host_services filter (its code: plugins/plugin_utils/filters/_host_services.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._host_services import Filters

DOCUMENTATION = r"""
name: host_services
version_added: 0.1.0
short_description: "The planned services of one host, optionally filtered"
description:
  - >-
    Returns the services the plan gives a host, in plan order, keeping only those that match every
    filter given. A host the plan gives nothing has no services.
  - >-
    Refuses a missing plan (run the plan first) and a plan whose C(version) is not the one this
    collection writes (re-run the plan with this collection).
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The plan (C(k3_plan_result.plan) of the plan stage)."
    type: dict
    required: true
  host:
    description: "The inventory host name."
    type: str
    required: true
  kind:
    description: "Keep services of this kind (vllm, router, proxy, metaservice), or of any kind of a list."
    type: raw
  runtime:
    description: "Keep services of this runtime (docker, host), or a list."
    type: raw
  role:
    description: "Keep services of this planned role (prefill, decode, engine, ...), or a list."
    type: raw
  name:
    description: "Keep services of this name, or a list."
    type: raw
  followers:
    description: >-
      True keeps only services that start once another has started (headless followers, C(after_started));
      false only the others (node 0 and single-node services). Unset keeps both.
    type: bool
  needs_engines:
    description: >-
      True keeps only the front services that wait for healthy engines (static P/D endpoints, the Ascend
      proxy); false only the others. Unset keeps both.
    type: bool
"""

EXAMPLES = r"""
- name: This host's vLLM engines
  ansible.builtin.set_fact:
    engine_services: "{{ engine_plan | kimi_k3.serving.host_services(inventory_hostname, kind='vllm') }}"

- name: The images of this host's containerized services
  ansible.builtin.debug:
    msg: "{{ plan | kimi_k3.serving.host_services(inventory_hostname, runtime='docker') | map(attribute='image') | unique }}"

- name: Routers and proxies that start before the engines
  ansible.builtin.debug:
    msg: "{{ plan | kimi_k3.serving.host_services(inventory_hostname, kind=['router', 'proxy'], needs_engines=false) }}"
"""

RETURN = r"""
_value:
  description: "The matching services of the plan (name, kind, role, argv, env, image, runtime, unit, ...)."
  type: list
  elements: dict
"""


class FilterModule:
    """kimi_k3.serving.host_services."""

    def filters(self):
        return {"host_services": Filters().filters()["host_services"]}
