# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Filter over plugin_utils/platforms/_nvidia.py."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._errors import filter_errors
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.platforms._nvidia import nvidia_prerequisites


class Filters:
    """kimi_k3.serving NVIDIA host filters."""

    def filters(self):
        return {"nvidia_prerequisites": filter_errors(nvidia_prerequisites)}
