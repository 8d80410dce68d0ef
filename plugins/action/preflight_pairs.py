# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Action plugin behind kimi_k3.serving.preflight_pairs: the planned connections, worked out in the
controller's own process (no module is sent anywhere, not even to the controller)."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.kimi_k3.serving.plugins.module_utils.preflight_connections import connections, probes


def preflight_pairs(plan, hosts=None):
    """The module's result for ``plan`` and the hosts taking part (None: every planned host)."""
    pairs = connections(plan)
    inside = set(plan.get("hosts") or {}) if hosts is None else set(hosts)
    untested = [p for p in pairs if p["src"] not in inside or p["dst"] not in inside]
    return {"changed": False, "pairs": pairs, "untested": len(untested), "hosts": probes(plan, pairs, hosts)}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("plan", "hosts"))
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        plan, hosts = self._task.args.get("plan"), self._task.args.get("hosts")
        if not isinstance(plan, dict):
            result.update(failed=True, msg="preflight_pairs needs plan: the plan stage's (a mapping)")
            return result
        if hosts is not None and not isinstance(hosts, list):
            result.update(failed=True, msg="preflight_pairs: hosts must be a list of host names")
            return result
        result.update(preflight_pairs(plan, hosts))
        return result
