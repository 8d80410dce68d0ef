# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""report.html's data from the plan: the texts of the page, in plan order, before any markup.

- ``service_key``, ``port_text``, ``rank_text``: how a service, a port and a service's place in
  its replica group read (the page's tables and the picture's boxes say them the same way).
- ``host_groups``: per host, its inventory groups.
- ``start_order``: the steps in which the services start, from their ``after`` waits.
- ``page_data(plan, groups)``: everything the page says as plain text (facts, the host and
  service tables, the start order); report/_html.py puts it into the template, escaped there.

Nothing here changes between two runs of the same plan (no timestamp, plan order throughout).
"""

from __future__ import annotations

import json

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._plan_output import front_door_line, keys_line


def service_key(host, svc):
    """``host/service``: how the plan names a service in its waits (``after``, ``after_started``)."""
    return "%s/%s" % (host, svc.get("name"))


def port_text(port):
    """``http 8000``, ``kv 36000-36015`` (a range of ``count`` ports)."""
    count = int(port.get("count") or 1)
    first = int(port["port"])
    return "%s %s" % (port.get("name"), first if count == 1 else "%d-%d" % (first, first + count - 1))


def rank_text(svc):
    """The service's place in its group: ``node 0, DP ranks 0-7 of 16``, ``headless follower, node 1``."""
    ranks = svc.get("ranks") or {}
    parts = []
    if "node_rank" in ranks:
        parts.append(_node_text(int(ranks["node_rank"]), svc.get("serves_http")))
    if "dp_rank" in ranks:
        parts.append("DP rank %s of %s" % (ranks["dp_rank"], ranks.get("dp_size", "?")))
    elif "dp_start_rank" in ranks:
        first = int(ranks["dp_start_rank"])
        local = int(ranks.get("dp_size_local") or 0) or (
            int(ranks.get("dp_size", 1)) // max(int(ranks.get("nnodes", 1)), 1)
        )
        span = "DP rank %d" % first if local <= 1 else "DP ranks %d-%d" % (first, first + local - 1)
        parts.append("%s of %s" % (span, ranks.get("dp_size", "?")))
    return ", ".join(parts)


def _node_text(node, serves_http):
    if node == 0:
        return "node 0"
    if serves_http:
        return "node %d" % node
    return "headless follower, node %d" % node


def host_groups(plan, groups=None):
    """Per host, its inventory groups (from ``groups``; else the roles of its services), plan order."""
    out = {}
    for host, data in (plan.get("hosts") or {}).items():
        if isinstance(groups, dict) and groups:
            names = [g for g, members in groups.items() if isinstance(members, (list, tuple)) and host in members]
        else:
            names = list(dict.fromkeys(s.get("role") for s in data.get("services") or [] if s.get("role")))
        out[host] = names
    return out


def start_order(plan):
    """``[(step, key, after, after_started)]``: a service's step is one past the last step it waits for."""
    services = {}
    for host, data in (plan.get("hosts") or {}).items():
        for svc in data.get("services") or []:
            services[service_key(host, svc)] = svc
    steps = {}

    def step(key, trail=()):
        if key in steps:
            return steps[key]
        if key in trail or key not in services:
            return 0
        svc = services[key]
        waits = list(svc.get("after") or []) + list(svc.get("after_started") or [])
        steps[key] = 1 + max((step(w, (*trail, key)) for w in waits), default=0)
        return steps[key]

    rows = [(step(k), k, list(s.get("after") or []), list(s.get("after_started") or [])) for k, s in services.items()]
    return sorted(rows, key=lambda r: r[0])


def variant_text(value):
    """The plan's variant as one text: its name, else its JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("name"), str):
        return value["name"]
    return json.dumps(value, sort_keys=True)


def _plural(count, noun):
    return "%d %s%s" % (count, noun, "" if count == 1 else "s")


def facts(plan):
    """The page's header facts, as text (``variant`` None when the plan has none)."""
    hosts = plan.get("hosts") or {}
    endpoint = plan.get("endpoint") or {}
    tls = plan.get("tls") or {}
    count = sum(len(d.get("services") or []) for d in hosts.values())
    return {
        "profile": plan.get("profile"),
        "title": plan.get("title"),
        "variant": None if plan.get("variant") is None else variant_text(plan.get("variant")),
        "platform": plan.get("platform") or "none (no accelerator)",
        "endpoint": {"url": endpoint.get("url"), "service": endpoint.get("service"), "host": endpoint.get("host")},
        "model": (plan.get("verify") or {}).get("served_model_name"),
        "api_keys": keys_line(plan.get("auth") or {}),
        "front_door": front_door_line(endpoint),
        "tls": "https on %s" % ", ".join(tls.get("services") or []) if tls.get("enabled") else "none",
        "size": "%s, %s" % (_plural(len(hosts), "host"), _plural(count, "service")),
        "version": plan.get("version"),
    }


def host_rows(plan, groups=None):
    """One row per host: its address, inventory groups, roles and services (``-`` for none)."""
    in_groups = host_groups(plan, groups)
    rows = []
    for host, data in (plan.get("hosts") or {}).items():
        entries = data.get("services") or []
        roles = list(dict.fromkeys(s.get("role") for s in entries if s.get("role")))
        rows.append(
            {
                "host": host,
                "ip": data.get("ip"),
                "groups": ", ".join(in_groups.get(host) or []) or "-",
                "roles": ", ".join(roles) or "-",
                "services": ", ".join(s.get("name") for s in entries) or "-",
            }
        )
    return rows


def service_rows(plan):
    """One row per planned service: kind, role, unit, what it runs, its place and its ports."""
    rows = []
    for host, data in (plan.get("hosts") or {}).items():
        for svc in data.get("services") or []:
            rows.append(
                {
                    "host": host,
                    "name": svc.get("name"),
                    "kind": svc.get("kind"),
                    "role": svc.get("role"),
                    "unit": "%s.service" % svc["unit"] if svc.get("unit") else "-",
                    "runs": ("image %s" % svc["image"]) if svc.get("image") else "on the host",
                    "place": rank_text(svc) or "-",
                    "ports": ", ".join(port_text(p) for p in svc.get("ports") or []) or "-",
                }
            )
    return rows


def start_rows(plan):
    """``start_order`` as the table's rows (``-`` for no wait)."""
    return [
        {"step": step, "key": key, "after": ", ".join(after) or "-", "started": ", ".join(started) or "-"}
        for step, key, after, started in start_order(plan)
    ]


def page_data(plan, groups=None):
    """Everything the page says, as text: ``facts``, ``hosts``, ``services`` and ``start_order`` rows."""
    return {
        "facts": facts(plan),
        "hosts": host_rows(plan, groups),
        "services": service_rows(plan),
        "start_order": start_rows(plan),
    }
