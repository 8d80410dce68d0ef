# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Filter over plugin_utils/platforms/_weights.py."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._errors import filter_errors
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.platforms._weights import manifest_differences


class Filters:
    """kimi_k3.serving checkpoint filters."""

    def filters(self):
        return {"manifest_differences": filter_errors(manifest_differences)}
