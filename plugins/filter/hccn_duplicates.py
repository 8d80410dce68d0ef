# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The hccn_duplicates filter (its code: plugins/plugin_utils/filters/_ascend.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._ascend import Filters

DOCUMENTATION = r"""
name: hccn_duplicates
version_added: 0.1.0
short_description: "NPU network addresses used more than once in a deployment"
description:
  - "Takes host to (device id to address) and lists every address that more than one NPU uses, naming them."
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "Host to its NPUs' addresses (kimi_k3.serving.hccn_addresses)."
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: No address twice
  ansible.builtin.assert:
    that: addresses_by_host | kimi_k3.serving.hccn_duplicates | length == 0
"""

RETURN = r"""
_value:
  description: "One message per address used more than once."
  type: list
  elements: str
"""


class FilterModule:
    """kimi_k3.serving.hccn_duplicates."""

    def filters(self):
        return {"hccn_duplicates": Filters().filters()["hccn_duplicates"]}
