# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Filter over plugin_utils/observability/_metrics.py."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._errors import filter_errors
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability._metrics import metric_sum


class Filters:
    """kimi_k3.serving metrics filters."""

    def filters(self):
        return {"metric_sum": filter_errors(metric_sum)}
