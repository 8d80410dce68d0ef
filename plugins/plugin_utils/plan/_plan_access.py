# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Reading a plan: a host's planned services, and which node 0 services restart with their followers.

Plain Python over the plan mapping (``plugins/plugin_utils/plan/_planner.py`` writes it); the filters
``kimi_k3.serving.host_services`` and ``kimi_k3.serving.node0_restarts`` are thin shims over it.
A plan that is missing, or that another version of the collection wrote, is refused with the fix.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._planner import PLAN_VERSION

PLAN_MISSING = (
    "no plan: run the plan first"
    " (ansible-playbook playbooks/plan.yml -i INVENTORY, or site.yml, whose first play plans)"
)
# systemctl is-active answers that do not mean a follower is down: it runs, is on its way up, or
# systemd could not say (no restart on a guess).
NOT_DOWN_STATES = frozenset(("active", "activating", "reloading", "unknown"))


class PlanAccessError(ValueError):
    """A plan that cannot be read, or a request it cannot answer."""


def checked_plan(plan):
    """``plan`` itself when this collection can read it; else PlanAccessError with the fix."""
    if plan is None or (isinstance(plan, Mapping) and not plan):
        raise PlanAccessError(PLAN_MISSING)
    if not isinstance(plan, Mapping):
        raise PlanAccessError(
            "the plan is a %s, not a mapping. Fix: pass the plan (k3_plan_result.plan)" % type(plan).__name__
        )
    version = plan.get("version")
    if version != PLAN_VERSION:
        raise PlanAccessError(
            "the plan has version %s; this collection (kimi_k3.serving) reads plans of version %d. "
            "Fix: re-run the plan with this collection (ansible-playbook playbooks/plan.yml -i INVENTORY)"
            % ("none" if version is None else repr(version), PLAN_VERSION)
        )
    if not isinstance(plan.get("hosts"), Mapping):
        raise PlanAccessError("the plan has no hosts mapping. Fix: re-run the plan with this collection")
    return plan


def _choices(value, what):
    """None (no filter), or the set of accepted values from a string or a list of strings."""
    if value is None:
        return None
    if isinstance(value, str):
        return {value}
    if isinstance(value, (list, tuple, set, frozenset)) and all(isinstance(v, str) for v in value):
        return set(value)
    raise PlanAccessError("%s: expected a string or a list of strings, got %r" % (what, value))


def _flag(value, what):
    if value is None or isinstance(value, bool):
        return value
    raise PlanAccessError("%s: expected true, false or none, got %r" % (what, value))


def host_services(plan, host, *, kind=None, runtime=None, role=None, name=None, followers=None, needs_engines=None):
    """The planned services of ``host``, in plan order, optionally filtered.

    ``kind``, ``runtime``, ``role``, ``name``: a value or a list of accepted values.
    ``followers``: True keeps only services that start once another has started (headless
    followers, ``after_started``), False only the others (node 0 and single-node services).
    ``needs_engines``: True keeps the front services that wait for healthy engines, False the others.
    A host the plan gives nothing (or does not know) has no services.
    """
    plan = checked_plan(plan)
    kinds = _choices(kind, "kind")
    runtimes = _choices(runtime, "runtime")
    roles = _choices(role, "role")
    names = _choices(name, "name")
    followers = _flag(followers, "followers")
    needs_engines = _flag(needs_engines, "needs_engines")
    data = plan["hosts"].get(host) or {}
    out = []
    for svc in data.get("services") or []:
        if kinds is not None and svc.get("kind") not in kinds:
            continue
        if runtimes is not None and svc.get("runtime") not in runtimes:
            continue
        if roles is not None and svc.get("role") not in roles:
            continue
        if names is not None and svc.get("name") not in names:
            continue
        if followers is not None and bool(svc.get("after_started")) != followers:
            continue
        if needs_engines is not None and bool(svc.get("needs_engines")) != needs_engines:
            continue
        out.append(svc)
    return out


def _state_lines(value):
    """One state per follower from what the systemctl is-active task registered (or a list/str)."""
    if value is None:
        return []
    if isinstance(value, Mapping):
        if "stdout_lines" in value:
            return list(value["stdout_lines"] or [])
        return str(value.get("stdout") or "").splitlines()
    if isinstance(value, str):
        return value.splitlines()
    return [str(v) for v in value]


def node0_restarts(plan, host, follower_states, read_before=None):
    """Names of ``host``'s node 0 engines to restart because one of their followers is down.

    ``read_before``: the same states read by an earlier stage of the run (preflight_host's
    ``unit_states``), taken for a host whose ``follower_states`` entry holds none.

    ``follower_states``: host -> the result of ``systemctl is-active <unit>...`` over that host's
    follower engines (``host_services(plan, host, kind='vllm', followers=True)``, in that order):
    the registered result, its ``stdout_lines`` or its ``stdout``. A follower whose state is
    missing (its host was not read, e.g. outside --limit) counts as running: only a follower seen
    down restarts its node 0, since a stopped follower cannot rejoin a running node 0.
    """
    plan = checked_plan(plan)
    if follower_states is None:
        follower_states = {}
    if not isinstance(follower_states, Mapping):
        raise PlanAccessError("follower_states: expected a mapping of host to systemctl is-active output")
    if not isinstance(read_before or {}, Mapping):
        raise PlanAccessError("read_before: expected a mapping of host to the follower states read before")
    down = set()
    for other in plan["hosts"]:
        states = _state_lines(follower_states.get(other)) or _state_lines((read_before or {}).get(other))
        for index, svc in enumerate(host_services(plan, other, kind="vllm", followers=True)):
            if index < len(states) and states[index].strip() not in NOT_DOWN_STATES:
                down.update(svc.get("after_started") or [])
    prefix = "%s/" % host
    wanted = {dep[len(prefix) :] for dep in down if dep.startswith(prefix)}
    return [svc["name"] for svc in host_services(plan, host, kind="vllm", followers=False) if svc["name"] in wanted]
