# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The ascend_prerequisites filter (its code: plugins/plugin_utils/filters/_ascend.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._ascend import Filters

DOCUMENTATION = r"""
name: ascend_prerequisites
version_added: 0.1.0
short_description: "What an Atlas 800 A3/A2 host needs before the engines start"
description:
  - >-
    Checks a host's accelerator facts against the profile: Ascend NPUs, exactly as many devices as the
    profile runs per node (16 dies on A3, 8 NPUs on A2), the driver and firmware (and, for the host
    runtime, the CANN toolkit) at least the configured versions, the image matching the host's operating
    system (Ubuntu or openEuler), every device and mount source of the spec's docker run present, and every
    NPU with a network address (hccn_tool).
  - "Each problem names the host, what is wrong and the fix."
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The host's C(k3_accelerator) facts."
    type: dict
    required: true
  services:
    description: "The host's planned services."
    type: list
    elements: dict
    required: true
  parameters:
    description: "The plan's parameters (C(devices_per_node), C(host_os), C(images))."
    type: dict
  host:
    description: "The host's name, for messages."
    type: str
  distribution:
    description: "C(ansible_facts.distribution)."
    type: str
  paths:
    description: "Each device and mount source of the planned docker run to its C(stat) result, or a boolean."
    type: dict
  hccn:
    description: "NPU device id to its network address (null when hccn_tool printed none); null skips the check."
    type: dict
  table:
    description: "C(min_driver), C(min_firmware), C(min_cann); a null entry is not checked."
    type: dict
"""

EXAMPLES = r"""
- name: Decide
  ansible.builtin.set_fact:
    need: >-
      {{ ansible_facts.k3_accelerator | kimi_k3.serving.ascend_prerequisites(
           plan.hosts[inventory_hostname].services, parameters=plan.parameters, host=inventory_hostname,
           distribution=ansible_facts.distribution) }}
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
    host_runtime:
      description: "An engine of this host runs on the host runtime (the CANN toolkit is checked)."
      type: bool
"""


class FilterModule:
    """kimi_k3.serving.ascend_prerequisites."""

    def filters(self):
        return {"ascend_prerequisites": Filters().filters()["ascend_prerequisites"]}
