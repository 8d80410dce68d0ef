# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Filters over plugin_utils/_ascend.py."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils._ascend import (
    ascend_prerequisites,
    duplicate_hccn_addresses,
    hccn_addresses,
)


class FilterModule:
    """kimi_k3.serving Ascend host filters."""

    def filters(self):
        return {
            "ascend_prerequisites": ascend_prerequisites,
            "hccn_addresses": hccn_addresses,
            "hccn_duplicates": duplicate_hccn_addresses,
        }
