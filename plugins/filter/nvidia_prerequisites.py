# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The nvidia_prerequisites filter (its code: plugins/plugin_utils/filters/_nvidia.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._nvidia import Filters

DOCUMENTATION = r"""
name: nvidia_prerequisites
version_added: 0.1.0
short_description: "What an NVIDIA host needs before the engines start"
description:
  - >-
    Decides, from a host's accelerator facts and its planned services, whether its driver is new
    enough for the CUDA 13 (cu130) kimi-k3 image (r580+), whether the r580 branch is to be installed,
    and which of the container toolkit, IMEX, the fabric manager and nvidia_peermem the host needs.
  - >-
    Refusals come back as messages naming the host, what is wrong and the fix: an old driver without
    O(upgrade), and mlx5 devices that cannot register dma-buf while NCCL_DMABUF_ENABLE is not 0
    (the recipe's errno 524 note).
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The host's C(k3_accelerator) facts (kimi_k3.serving.accelerator_facts)."
    type: dict
    required: true
  services:
    description: "The host's planned services (plan.json C(hosts.<host>.services))."
    type: list
    elements: dict
    required: true
  parameters:
    description: "The plan's parameters (C(fabric) decides multi-node NVLink)."
    type: dict
  host:
    description: "The host's name, for messages."
    type: str
  node_count:
    description: "How many NVIDIA nodes the deployment has."
    type: int
    default: 1
  kernel:
    description: "The running kernel's release (C(ansible_facts.kernel))."
    type: str
  proc_version:
    description: "The text of C(/proc/driver/nvidia/version), when readable."
    type: str
  upgrade:
    description: "The operator allows installing the r580 branch (C(k3_nvidia_driver_upgrade))."
    type: bool
    default: false
  min_branch:
    description: "The oldest driver branch accepted."
    type: int
    default: 580
  imex:
    description: "V(auto) decides from the devices and the plan; a boolean forces IMEX on or off."
    type: raw
    default: auto
  fabricmanager:
    description: "V(auto) decides from the devices; a boolean forces the fabric manager on or off."
    type: raw
    default: auto
"""

EXAMPLES = r"""
- name: Decide what this host needs
  ansible.builtin.set_fact:
    need: >-
      {{ ansible_facts.k3_accelerator | kimi_k3.serving.nvidia_prerequisites(
           plan.hosts[inventory_hostname].services, parameters=plan.parameters,
           host=inventory_hostname, upgrade=true) }}
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
    loaded_version:
      description: "The loaded driver's version, or null."
      type: str
    loaded_branch:
      description: "Its branch (major number), or null."
      type: int
    driver_ok:
      description: "The loaded driver is r580 or newer."
      type: bool
    driver_upgrade:
      description: "Install the r580 branch (the driver is older and the operator opted in)."
      type: bool
    container_toolkit:
      description: "A planned service runs in Docker: the NVIDIA container toolkit and runtime are needed."
      type: bool
    imex:
      description: "Grace-Blackwell nodes in a multi-node NVLink domain (or forced): run IMEX."
      type: bool
    fabricmanager:
      description: "An NVSwitch HGX board (or forced): run the fabric manager."
      type: bool
    peermem:
      description: "NCCL_DMABUF_ENABLE=0 is in effect: load nvidia_peermem."
      type: bool
"""


class FilterModule:
    """kimi_k3.serving.nvidia_prerequisites."""

    def filters(self):
        return {"nvidia_prerequisites": Filters().filters()["nvidia_prerequisites"]}
