# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Filter over plugin_utils/_metrics.py."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils._metrics import metric_sum


class FilterModule:
    """kimi_k3.serving metrics filters."""

    def filters(self):
        return {"metric_sum": metric_sum}
