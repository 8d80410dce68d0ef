# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Filter over module_utils/metrics.py."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.module_utils.metrics import metric_sum


class FilterModule:
    """kimi_k3.serving metrics filters."""

    def filters(self):
        return {"metric_sum": metric_sum}
