# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""kimi_k3.serving rolling-operation filters (logic in plugin_utils/operations/_rolling.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._errors import filter_errors, needs_plan
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations import _canary as canary_roll
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations import _releases as releases
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations import _rolling as rolling


@filter_errors
def router_registrations(plan, host=None):
    return rolling.router_registrations(needs_plan(plan, "router_registrations"), host)


def router_missing_workers(results):
    return rolling.missing_workers(results)


@filter_errors
def replica_batches(plan, serial=1, only=None):
    groups, out = _batches(needs_plan(plan, "replica_batches"), serial, only)
    rolled = {g for batch in out["batches"] for g in batch}
    out["outages"] = out["outages"] + rolling.front_outages(plan, [g for g in groups if g["id"] in rolled])
    return out


@filter_errors(label="replica_batches", errors=(rolling.RollingError,))
def _batches(plan, serial, only):
    groups = rolling.replica_groups(plan)
    return groups, dict(rolling.batches(groups, serial, None if only is None else list(only)), groups=groups)


@filter_errors
def replica_members(plan, group_ids):
    return rolling.replica_members(needs_plan(plan, "replica_members"), list(group_ids))


@filter_errors
def front_actions(plan, group_ids):
    return rolling.front_actions(needs_plan(plan, "front_actions"), list(group_ids))


@filter_errors
def changed_groups(plan, changed):
    if not isinstance(changed, dict):
        raise ValueError("changed_groups needs a mapping of host to changed service names")
    return rolling.changed_groups(needs_plan(plan, "changed_groups"), changed)


@filter_errors
def node_removal(plan, nodes):
    if isinstance(nodes, str):
        nodes = [n.strip() for n in nodes.split(",") if n.strip()]
    return _node_removal(needs_plan(plan, "node_removal"), nodes)


@filter_errors(label="node", errors=(rolling.RollingError,))
def _node_removal(plan, nodes):
    return rolling.node_removal(plan, nodes)


def listed_models(answer):
    return rolling.listed_models(answer)


@filter_errors
def upgrade_roll(plan, changed, canary=1, canary_groups=None, serial=1, pause_after=0):
    if not isinstance(changed, dict):
        raise ValueError("upgrade_roll needs a mapping of host to changed service names")
    out = _upgrade_roll(needs_plan(plan, "upgrade_roll"), changed, canary, canary_groups, serial, pause_after)
    rolled = [g for batch in out["batches"] for g in batch]
    groups = [g for g in rolling.replica_groups(plan) if g["id"] in rolled]
    out["outages"] = out["outages"] + rolling.front_outages(plan, groups)
    return out


@filter_errors(label="upgrade", errors=(rolling.RollingError,))
def _upgrade_roll(plan, changed, canary, canary_groups, serial, pause_after):
    return canary_roll.upgrade_roll(plan, changed, canary, canary_groups, serial, pause_after)


def release_moves(results):
    return releases.moves([list(pair) for pair in results or []])


class Filters:
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
            "release_moves": release_moves,
            "upgrade_roll": upgrade_roll,
        }
