# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""kimi_k3.serving.status_report: the deployment's status table and its problems, by name."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.kimi_k3.serving.plugins.module_utils import status


def _status_report(plan, gathered, hosts=None):
    if not isinstance(plan, dict) or "hosts" not in plan:
        raise AnsibleFilterError("status_report needs the plan (k3_plan_result.plan): run the plan stage first")
    if not isinstance(gathered, dict):
        raise AnsibleFilterError("status_report: the second argument is a mapping of host to what it reported")
    return status.report(plan, gathered, None if hosts is None else list(hosts))


class FilterModule:
    """kimi_k3.serving status filter."""

    def filters(self):
        return {"status_report": _status_report}
