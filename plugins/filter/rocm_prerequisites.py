# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The rocm_prerequisites filter (its code: plugins/plugin_utils/filters/_rocm.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._rocm import Filters

DOCUMENTATION = r"""
name: rocm_prerequisites
version_added: 0.1.0
short_description: "What an AMD Instinct host needs before the engines start"
description:
  - >-
    Checks a host's accelerator facts against the profile and a compatibility table kept as data: AMD GPUs
    of a model in the table, as many as the profile runs per node, ROCm and the amdgpu driver at least the
    table's versions, /dev/kfd and /dev/dri present, readable and writable, RDMA devices when the planned
    containers get /dev/infiniband, and not the day-0 kimi-k3 image with DSpark (it predates the fixes the
    MI355X path needs).
  - "Each problem names the host, what is wrong and the fix."
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The host's C(k3_accelerator) facts (kimi_k3.serving.accelerator_facts)."
    type: dict
    required: true
  services:
    description: "The host's planned services."
    type: list
    elements: dict
    required: true
  parameters:
    description: "The plan's parameters (C(devices_per_node))."
    type: dict
  host:
    description: "The host's name, for messages."
    type: str
  devices:
    description: "C(/dev/kfd), C(/dev/dri), C(/dev/infiniband) to their C(ansible.builtin.stat) results, or booleans."
    type: dict
  table:
    description: "The compatibility table: entries with C(models), C(min_rocm), C(min_amdgpu) and C(note)."
    type: list
    elements: dict
"""

EXAMPLES = r"""
- name: Decide
  ansible.builtin.set_fact:
    need: >-
      {{ ansible_facts.k3_accelerator | kimi_k3.serving.rocm_prerequisites(
           plan.hosts[inventory_hostname].services, parameters=plan.parameters, host=inventory_hostname,
           devices={'/dev/kfd': true, '/dev/dri': true}, table=rocm_compatibility) }}
"""

RETURN = r"""
_value:
  description: "The decision."
  type: dict
  contains:
    problems:
      description: "Refusals; empty when the host may proceed."
      type: list
      elements: str
    rdma:
      description: "The planned containers use /dev/infiniband (memlock limits and the verbs check apply)."
      type: bool
    images:
      description: "The engines' images on this host."
      type: list
      elements: str
"""


class FilterModule:
    """kimi_k3.serving.rocm_prerequisites."""

    def filters(self):
        return {"rocm_prerequisites": Filters().filters()["rocm_prerequisites"]}
