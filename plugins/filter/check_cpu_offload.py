# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The check_cpu_offload filter (its code: plugins/plugin_utils/filters/_k3.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._k3 import Filters

DOCUMENTATION = r"""
name: check_cpu_offload
version_added: 0.1.0
short_description: "Check a CPU offload budget against host memory"
description:
  - "Fails when the offload bytes exceed the host memory less a 10% reserve for weights and runtime; returns the bytes."
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "Offload bytes (0 or null: no offload)."
    type: int
    required: true
  memory_bytes:
    description: "The host's memory in bytes; null skips the check."
    type: int
    required: true
"""

EXAMPLES = r"""
- name: The documented 2399 GB budget on a 3 TiB host
  ansible.builtin.debug:
    msg: "{{ 2399000000000 | kimi_k3.serving.check_cpu_offload(3298534883328) }}"
"""

RETURN = r"""
_value:
  description: "The offload bytes."
  type: int
"""


class FilterModule:
    """kimi_k3.serving.check_cpu_offload."""

    def filters(self):
        return {"check_cpu_offload": Filters().filters()["check_cpu_offload"]}
