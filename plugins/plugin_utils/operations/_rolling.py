# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Replica groups of a plan and the batches a rolling operation takes them in.

A replica group is what can restart alone: one vLLM engine with everything that must restart with
it (a data-parallel node 0 with its headless followers, a multi-node engine's node 0 with the
nodes that join it: the services whose ``after_started`` names it). Routers, proxies and the
MetaService are not replicas: they are the deployment's front door and shared services.

A rolling operation takes ``serial`` groups at a time, never every group of one role at once
while another batch could keep that role serving. A role with a single group cannot roll without
an outage of that role; neither can a batch size that takes all of a role's groups: ``outages``
says so, naming the role, for the caller to ask for a confirmation.
"""

from __future__ import annotations

import json
from urllib.parse import quote

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._profiles import argv_flags, flag_key


class RollingError(ValueError):
    """A plan or a batch size a rolling operation cannot use."""


def _key(host, svc):
    return "%s/%s" % (host, svc["name"])


def replica_groups(plan):
    """The plan's replica groups, in plan order: ``[{id, role, members, hosts, url, fronts}]``."""
    services = {}
    order = []
    for host, data in (plan.get("hosts") or {}).items():
        for svc in data.get("services") or []:
            services[_key(host, svc)] = (host, svc)
            order.append(_key(host, svc))
    groups = {}
    for key in order:
        host, svc = services[key]
        if svc.get("kind") != "vllm":
            continue
        root = (svc.get("after_started") or [key])[0]
        if root not in services:
            raise RollingError("%s starts after %s, which the plan does not have" % (key, root))
        group = groups.setdefault(
            root, {"id": root, "role": services[root][1].get("role"), "members": [], "hosts": [], "url": None}
        )
        group["members"].append(key)
        if host not in group["hosts"]:
            group["hosts"].append(host)
        if key == root:
            group["url"] = svc.get("url")
    for group in groups.values():
        group["fronts"] = [
            key
            for key in order
            if services[key][1].get("kind") in ("router", "proxy")
            and any(member in (services[key][1].get("after") or []) for member in group["members"])
        ]
    return list(groups.values())


def changed_groups(plan, changed):
    """The replica groups (ids, plan order) with a member in ``changed``: ``{host: [service name, ...]}``.

    A group restarts whole (node 0 with its followers), so one changed member takes its group.
    """
    names = {host: set(services or []) for host, services in (changed or {}).items()}
    out = []
    for group in replica_groups(plan):
        for key in group["members"]:
            host, _unused, name = key.partition("/")
            if name in names.get(host, ()):
                out.append(group["id"])
                break
    return out


def node_removal(plan, nodes):
    """What removing the engine hosts ``nodes`` takes away: ``{groups, hosts, outages}``.

    ``groups``: the replica groups with a member on one of them (plan order); ``hosts``: every host
    of those groups (a node of a multi-node engine takes its whole engine, and the other hosts of
    it go too); ``outages``: each role left with no group at all. A node with no engine of the
    plan is an error naming it.
    """
    nodes = list(nodes or [])
    hosts = plan.get("hosts") or {}
    groups = replica_groups(plan)
    on = {h for g in groups for h in g["hosts"]}
    problems = [n for n in nodes if n not in on]
    if not nodes:
        raise RollingError("name the engine host to remove (-e node=HOST)")
    if problems:
        known = sorted(on)
        raise RollingError(
            "%s %s no engine of the plan (engine hosts: %s)"
            % (", ".join(problems), "runs" if len(problems) == 1 else "run", ", ".join(known))
            if all(p in hosts for p in problems)
            else "%s: not in the inventory's plan (engine hosts: %s)" % (", ".join(problems), ", ".join(known))
        )
    chosen = [g for g in groups if set(g["hosts"]) & set(nodes)]
    leaving = []
    for g in chosen:
        for h in g["hosts"]:
            if h not in leaving:
                leaving.append(h)
    outages = []
    for role in dict.fromkeys(g["role"] for g in chosen):
        if all(g in chosen for g in groups if g["role"] == role):
            outages.append("removing %s leaves no %s engine: the deployment stops serving" % (", ".join(leaving), role))
    return {"groups": [g["id"] for g in chosen], "hosts": leaving, "outages": outages}


def _alternating(by_role):
    """The groups, one of each role in turn."""
    depth = max((len(v) for v in by_role.values()), default=0)
    return [role_groups[i] for i in range(depth) for role_groups in by_role.values() if i < len(role_groups)]


def _role_outage(role, role_groups, out, serial):
    """The sentence saying that rolling ``out`` stops ``role``, or None."""
    if len(role_groups) == 1:
        return "role %s has a single replica group (%s): restarting it stops that role until it is back" % (
            role,
            role_groups[0]["id"],
        )
    for batch in out:
        if all(g in batch for g in role_groups):
            return "a batch of %d takes every %s group at once (%s): lower the batch size below %d" % (
                serial,
                role,
                ", ".join(g["id"] for g in role_groups),
                len(role_groups),
            )
    return None


def batches(groups, serial=1, only=None):
    """``{"batches": [[group id, ...], ...], "outages": [sentence, ...]}`` for ``serial`` groups at a time.

    Groups of different roles alternate, so that each batch takes as few groups of one role as it
    can; a role's groups are never all in one batch unless ``serial`` leaves no other way. ``only``
    (group ids) rolls just those groups (upgrade.yml: the ones whose files changed); the others of
    their role keep serving, so a role is out only if its every group is in one batch.
    """
    if isinstance(serial, bool) or not isinstance(serial, int) or serial < 1:
        raise RollingError("the batch size must be a whole number of replica groups, 1 or more (got %r)" % (serial,))
    everyone = {}
    for group in groups:
        everyone.setdefault(group["role"], []).append(group)
    if only is not None:
        wanted = set(only)
        unknown = sorted(wanted - {g["id"] for g in groups})
        if unknown:
            raise RollingError("no replica group is called %s" % ", ".join(unknown))
        groups = [g for g in groups if g["id"] in wanted]
    by_role = {}
    for group in groups:
        by_role.setdefault(group["role"], []).append(group)
    out = []
    for group in _alternating(by_role):
        current = out[-1] if out else None
        if current is None or len(current) >= serial:
            out.append([group])
        else:
            current.append(group)
    outages = [_role_outage(role, everyone[role], out, serial) for role in by_role]
    outages = [o for o in outages if o]
    return {"batches": [[g["id"] for g in batch] for batch in out], "outages": outages}


def _flag_present(argv, name):
    return flag_key(name) in argv_flags([str(a) for a in argv or []])


def _flag_value(argv, name):
    """The value of ``name`` in an argv list (profiles.argv_flags: the last one wins); None when absent."""
    return argv_flags([str(a) for a in argv or []]).get(flag_key(name))


def listed_models(answer):
    """The model names a ``GET /v1/models`` answer lists (a mapping, or its JSON text).

    vLLM and a vllm-router with fixed workers answer in OpenAI's shape (``data[].id``); a
    runtime-registering vllm-router (``--enable-igw``) answers ``{"models": [...]}`` as text.
    Anything else lists nothing.
    """
    if isinstance(answer, (str, bytes)):
        try:
            answer = json.loads(answer)
        except ValueError:
            return []
    if not isinstance(answer, dict):
        return []
    if isinstance(answer.get("data"), list):
        return [m.get("id") for m in answer["data"] if isinstance(m, dict) and m.get("id")]
    return [m for m in answer.get("models") or [] if isinstance(m, str)]


def _pd_front(svc, services):
    """Whether a router sends P/D requests: P/D mode, or a runtime-registering router in front of
    prefill and decode engines (it serves workers registered as prefill/decode with its P/D router)."""
    argv = svc.get("argv")
    if _flag_present(argv, "--vllm-pd-disaggregation"):
        return True
    if not _flag_present(argv, "--enable-igw"):
        return False
    roles = set()
    for dep in svc.get("after") or []:
        other = services.get(dep)
        if isinstance(other, tuple):
            other = other[1]
        if other and other.get("kind") == "vllm":
            roles.add(other.get("role"))
    return {"prefill", "decode"} <= roles


def router_registrations(plan, host=None):
    """The workers each runtime-registering router must be told about: ``[{router, url, workers}]``.

    A vllm-router started with ``--enable-igw`` ignores its ``--prefill``/``--decode``/
    ``--worker-urls`` and takes workers only through ``POST /workers``: its planned workers are
    the vLLM API servers it starts after (``after``), each with its ``worker_type`` (``prefill``,
    ``decode``, else ``regular``) and ``model_id``: the engine's ``--served-model-name`` (else the
    plan's), which the router lists at ``/v1/models`` (it cannot ask an engine that needs a key).
    ``host`` keeps the routers of one host.
    """
    default_model = (plan.get("verify") or {}).get("served_model_name")
    services = {}
    for name, data in (plan.get("hosts") or {}).items():
        for svc in data.get("services") or []:
            services[_key(name, svc)] = svc
    out = []
    for name, data in (plan.get("hosts") or {}).items():
        if host is not None and name != host:
            continue
        for svc in data.get("services") or []:
            if svc.get("kind") != "router" or not _flag_present(svc.get("argv"), "--enable-igw"):
                continue
            pd = _pd_front(svc, services)
            workers = []
            for dep in svc.get("after") or []:
                other = services.get(dep)
                if not other or other.get("kind") != "vllm" or not other.get("url"):
                    continue
                role = other.get("role")
                kind = role if pd and role in ("prefill", "decode") else "regular"
                model = _flag_value(other.get("argv"), "--served-model-name") or default_model
                workers.append({"service": dep, "url": other["url"], "worker_type": kind, "model_id": model})
            out.append({"router": _key(name, svc), "url": svc.get("url"), "workers": workers})
    return out


def workers_to_add(listed, planned):
    """The planned workers (``router_registrations``' ``workers``) a router's ``GET /workers`` answer lacks."""
    have = {w.get("url") for w in ((listed or {}).get("workers") or [])}
    return [w for w in planned if w["url"] not in have]


def missing_workers(results):
    """``[[registration, worker], ...]`` to POST, from a loop over ``router_registrations`` that
    registered each router's ``GET /workers`` answer (``router_reg`` and ``json`` in each result)."""
    out = []
    for result in results or []:
        reg = result.get("router_reg") or {}
        for worker in workers_to_add(result.get("json"), reg.get("workers") or []):
            out.append([reg, worker])
    return out


def front_actions(plan, group_ids):
    """How each front door of the groups ``group_ids`` lets go of them and takes them back.

    Per (router, group): ``igw`` (a router that takes workers at runtime: ``DELETE /workers/<url>``,
    later ``POST /workers``), ``static`` (a vllm-router with a fixed worker list:
    ``/remove_worker``, and back only when the router itself restarts: an outage), or ``none``
    (a front service the collection cannot tell, e.g. the Ascend proxy: the group simply restarts).
    """
    services = {}
    for name, data in (plan.get("hosts") or {}).items():
        for svc in data.get("services") or []:
            services[_key(name, svc)] = (name, svc)
    wanted = set(group_ids)
    default_model = (plan.get("verify") or {}).get("served_model_name")
    out = []
    for group in replica_groups(plan):
        if group["id"] not in wanted or not group.get("url"):
            continue
        engine = services[group["id"]][1]
        role = engine.get("role")
        model = _flag_value(engine.get("argv"), "--served-model-name") or default_model
        for front in group["fronts"]:
            host, svc = services[front]
            argv = svc.get("argv") or []
            if svc.get("kind") != "router":
                mode = "none"
            elif _flag_present(argv, "--enable-igw"):
                mode = "igw"
            else:
                mode = "static"
            pd = _pd_front(svc, services)
            out.append(
                {
                    "group": group["id"],
                    "front": front,
                    "front_host": host,
                    "front_unit": svc.get("unit"),
                    "front_url": svc.get("url"),
                    "front_health": (svc.get("health") or {}).get("url"),
                    "mode": mode,
                    "worker_url": group["url"],
                    # DELETE /workers/<this>: the worker's URL as one path segment.
                    "worker_path": quote(group["url"], safe=""),
                    "worker_type": role if pd and role in ("prefill", "decode") else "regular",
                    "model_id": model,
                }
            )
    return out


def front_outages(plan, groups):
    """Sentences for the front doors that cannot take a restarted group back without stopping."""
    out = []
    seen = set()
    for action in front_actions(plan, [g["id"] for g in groups]):
        if action["mode"] == "static" and action["front"] not in seen:
            seen.add(action["front"])
            out.append(
                "%s has a fixed worker list (vllm-router without --enable-igw takes a removed worker back "
                "only when it restarts): it restarts after each batch, refusing clients for a few seconds"
                % action["front"]
            )
    return out


def replica_members(plan, group_ids):
    """The services of the groups ``group_ids``, node 0 first: ``[{key, host, name, unit, node0, group, url, health}]``.

    ``health`` is the plan's (what ``health_targets`` and ``service_health`` wait on); ``url`` its
    URL (None for a headless follower)."""
    wanted = set(group_ids)
    index = {}
    for host, data in (plan.get("hosts") or {}).items():
        for svc in data.get("services") or []:
            index[_key(host, svc)] = (host, svc)
    out = []
    for group in replica_groups(plan):
        if group["id"] not in wanted:
            continue
        for key in group["members"]:
            host, svc = index[key]
            out.append(
                {
                    "key": key,
                    "host": host,
                    "name": svc["name"],
                    "unit": svc["unit"],
                    "node0": key == group["id"],
                    "group": group["id"],
                    "url": (svc.get("health") or {}).get("url"),
                    "health": svc.get("health"),
                }
            )
    return sorted(out, key=lambda m: not m["node0"])
