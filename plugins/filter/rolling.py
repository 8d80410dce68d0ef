# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""kimi_k3.serving rolling-operation filters (logic in plugin_utils/_rolling.py)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.kimi_k3.serving.plugins.plugin_utils import _rolling as rolling


def _plan(plan, name):
    if not isinstance(plan, dict) or "hosts" not in plan:
        raise AnsibleFilterError("%s needs the plan (k3_plan_result.plan): run the plan stage first" % name)
    return plan


def router_registrations(plan, host=None):
    return rolling.router_registrations(_plan(plan, "router_registrations"), host)


def router_missing_workers(results):
    return rolling.missing_workers(results)


def replica_batches(plan, serial=1, only=None):
    try:
        groups = rolling.replica_groups(_plan(plan, "replica_batches"))
        out = dict(rolling.batches(groups, serial, None if only is None else list(only)), groups=groups)
    except rolling.RollingError as exc:
        raise AnsibleFilterError("replica_batches: %s" % exc) from None
    rolled = {g for batch in out["batches"] for g in batch}
    out["outages"] = out["outages"] + rolling.front_outages(plan, [g for g in groups if g["id"] in rolled])
    return out


def replica_members(plan, group_ids):
    return rolling.replica_members(_plan(plan, "replica_members"), list(group_ids))


def front_actions(plan, group_ids):
    return rolling.front_actions(_plan(plan, "front_actions"), list(group_ids))


def changed_groups(plan, changed):
    if not isinstance(changed, dict):
        raise AnsibleFilterError("changed_groups needs a mapping of host to changed service names")
    return rolling.changed_groups(_plan(plan, "changed_groups"), changed)


def node_removal(plan, nodes):
    if isinstance(nodes, str):
        nodes = [n.strip() for n in nodes.split(",") if n.strip()]
    try:
        return rolling.node_removal(_plan(plan, "node_removal"), nodes)
    except rolling.RollingError as exc:
        raise AnsibleFilterError("node: %s" % exc) from None


def listed_models(answer):
    return rolling.listed_models(answer)


class FilterModule:
    """kimi_k3.serving rolling filters."""

    def filters(self):
        return {
            "router_registrations": router_registrations,
            "router_missing_workers": router_missing_workers,
            "replica_batches": replica_batches,
            "front_actions": front_actions,
            "replica_members": replica_members,
            "listed_models": listed_models,
            "changed_groups": changed_groups,
            "node_removal": node_removal,
        }
