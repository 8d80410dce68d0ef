# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Filter over plugin_utils/_weights.py."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils._weights import manifest_differences


class FilterModule:
    """kimi_k3.serving checkpoint filters."""

    def filters(self):
        return {"manifest_differences": manifest_differences}
