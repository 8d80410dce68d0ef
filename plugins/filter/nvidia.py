# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Filter over plugin_utils/_nvidia.py."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils._nvidia import nvidia_prerequisites


class FilterModule:
    """kimi_k3.serving NVIDIA host filters."""

    def filters(self):
        return {"nvidia_prerequisites": nvidia_prerequisites}
