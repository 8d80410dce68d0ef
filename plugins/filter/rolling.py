# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""kimi_k3.serving rolling-operation filters (logic in module_utils/rolling.py)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.kimi_k3.serving.plugins.module_utils import rolling


def _plan(plan, name):
    if not isinstance(plan, dict) or "hosts" not in plan:
        raise AnsibleFilterError("%s needs the plan (k3_plan_result.plan): run the plan stage first" % name)
    return plan


def router_registrations(plan, host=None):
    return rolling.router_registrations(_plan(plan, "router_registrations"), host)


def router_missing_workers(results):
    return rolling.missing_workers(results)


def replica_batches(plan, serial=1):
    try:
        groups = rolling.replica_groups(_plan(plan, "replica_batches"))
        return dict(rolling.batches(groups, serial), groups=groups)
    except rolling.RollingError as exc:
        raise AnsibleFilterError("replica_batches: %s" % exc) from None


class FilterModule:
    """kimi_k3.serving rolling filters."""

    def filters(self):
        return {
            "router_registrations": router_registrations,
            "router_missing_workers": router_missing_workers,
            "replica_batches": replica_batches,
        }
