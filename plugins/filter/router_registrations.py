# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The router_registrations filter (its code: plugins/plugin_utils/filters/_rolling.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._rolling import Filters

DOCUMENTATION = r"""
name: router_registrations
version_added: 0.3.0
short_description: "The workers each runtime-registering router must be told about"
description:
  - >-
    A vllm-router started with C(--enable-igw) ignores its C(--prefill), C(--decode) and
    C(--worker-urls) and takes workers only through C(POST /workers). Its planned workers are the
    vLLM API servers it starts after, each with its C(worker_type) (C(prefill) or C(decode) in
    P/D mode, else C(regular)). Other routers get nothing.
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The plan (k3_plan_result.plan)."
    type: dict
    required: true
  host:
    description: "Only the routers of this inventory host."
    type: str
"""

EXAMPLES = r"""
- name: The routers of this host that take workers at runtime
  ansible.builtin.debug:
    msg: "{{ plan | kimi_k3.serving.router_registrations(inventory_hostname) }}"
"""

RETURN = r"""
_value:
  description: "Per router: router (its plan key), url and workers (service, url, worker_type, model_id: the served model name)."
  type: list
  elements: dict
"""


class FilterModule:
    """kimi_k3.serving.router_registrations."""

    def filters(self):
        return {"router_registrations": Filters().filters()["router_registrations"]}
