# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The bundle_hardware filter (its code: plugins/plugin_utils/observability/_hardware_findings.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._monitoring import Filters

DOCUMENTATION = r"""
name: bundle_hardware
version_added: 0.4.0
short_description: "The hardware findings a support bundle takes of a host"
description:
  - >-
    The kernel log's lines about the hardware to keep (NVIDIA XID and ECC, AMD RAS and ECC, Ascend
    device-driver lines, mlx5 and InfiniBand errors, machine checks, EDAC), and on a host that runs
    an engine the platform's own tools to run where they are installed (C(nvidia-smi -q) and its
    topology, C(amd-smi list) and C(rocm-smi), C(npu-smi info) and C(hccn_tool)'s link, network
    health, address and route checks of every device NIC) and C(ibv_devinfo).
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The plan."
    type: dict
    required: true
  host:
    description: "The inventory host."
    type: str
    required: true
"""

EXAMPLES = r"""
- name: This host's part of the bundle, with its hardware findings
  kimi_k3.serving.support_bundle:
    host: "{{ inventory_hostname }}"
    dest: /tmp/k3-support.tar.gz
    hardware: "{{ plan | kimi_k3.serving.bundle_hardware(inventory_hostname) }}"
"""

RETURN = r"""
_value:
  description: "commands (name and argv of each tool), kernel_patterns (regular expressions) and
    tool_dirs (folders searched for the tools besides PATH)."
  type: dict
"""


class FilterModule:
    """kimi_k3.serving.bundle_hardware."""

    def filters(self):
        return {"bundle_hardware": Filters().filters()["bundle_hardware"]}
