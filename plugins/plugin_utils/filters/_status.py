# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""kimi_k3.serving.status_report: the deployment's status table and its problems, by name."""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._errors import filter_errors, needs_plan
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations import _status as status


@filter_errors
def _status_report(plan, gathered, hosts=None, fact=None):
    needs_plan(plan, "status_report")
    if not isinstance(gathered, Mapping):
        raise ValueError("status_report: the second argument is a mapping of host to what it reported")
    hosts = None if hosts is None else list(hosts)
    if fact:
        # hostvars: each host's fact, where the host set it (a host that was not reached has none).
        names = hosts if hosts is not None else list(plan["hosts"])
        gathered = {h: (gathered[h].get(fact) if h in gathered else None) for h in names}
        gathered = {h: v for h, v in gathered.items() if v is not None}
    return status.report(plan, dict(gathered), hosts)


class Filters:
    """kimi_k3.serving status filter."""

    def filters(self):
        return {"status_report": _status_report}
