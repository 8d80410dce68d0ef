# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""kimi_k3.serving fabric-check filters (logic in plugin_utils/operations/_fabric.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._errors import filter_errors, needs_plan
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations import _fabric as fabric


@filter_errors
def fabric_plan(plan, settings, hosts=None, addresses=None):
    return fabric.prepare(
        needs_plan(plan, "fabric_plan"), dict(settings), None if hosts is None else list(hosts), addresses
    )


@filter_errors
def fabric_report(prepared, measurements, tool_results=None):
    if not isinstance(prepared, dict) or "pairs" not in prepared:
        raise ValueError("fabric_report needs what fabric_plan prepared")
    return fabric.report(prepared, list(measurements or []), list(tool_results or []))


class Filters:
    """kimi_k3.serving fabric filters."""

    def filters(self):
        return {"fabric_plan": fabric_plan, "fabric_report": fabric_report}
