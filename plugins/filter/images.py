# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Filter over plugin_utils/_images.py."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils._images import image_differences


class FilterModule:
    """kimi_k3.serving container image filters."""

    def filters(self):
        return {"image_differences": image_differences}
