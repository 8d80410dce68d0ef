# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Filters over plugin_utils/platforms/_ascend.py."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._errors import filter_errors
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.platforms._ascend import (
    ascend_prerequisites,
    duplicate_hccn_addresses,
    hccn_addresses,
)


class Filters:
    """kimi_k3.serving Ascend host filters."""

    def filters(self):
        return {
            "ascend_prerequisites": filter_errors(ascend_prerequisites),
            "hccn_addresses": filter_errors(hccn_addresses),
            "hccn_duplicates": filter_errors(duplicate_hccn_addresses),
        }
