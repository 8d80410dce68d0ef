# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The hccn_addresses filter (its code: plugins/plugin_utils/filters/_ascend.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._ascend import Filters

DOCUMENTATION = r"""
name: hccn_addresses
version_added: 0.1.0
short_description: "NPU network addresses from hccn_tool output"
description:
  - "Takes device id to the output of C(hccn_tool -i N -ip -g) and gives device id to its C(ipaddr), or null."
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "Device id to the tool's output."
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Addresses of this host's NPUs
  ansible.builtin.set_fact:
    npu_addresses: "{{ {0: 'ipaddr:29.1.112.213\nnetmask:255.255.0.0'} | kimi_k3.serving.hccn_addresses }}"
"""

RETURN = r"""
_value:
  description: "Device id to address (null when none was printed)."
  type: dict
"""


class FilterModule:
    """kimi_k3.serving.hccn_addresses."""

    def filters(self):
        return {"hccn_addresses": Filters().filters()["hccn_addresses"]}
