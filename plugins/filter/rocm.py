# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Filter over plugin_utils/_rocm.py."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils._rocm import rocm_prerequisites


class FilterModule:
    """kimi_k3.serving AMD host filters."""

    def filters(self):
        return {"rocm_prerequisites": rocm_prerequisites}
