# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""report.html: the plan as a person reads it, with a picture of the cluster.

Plain Python (no Ansible), in four steps the plan action chains in ``report_file``:

- ``topology(plan, groups)``: the picture as data: one node per planned service (every host
  named), the clients' entry, a cluster per pool (prefill, decode, engines) holding the replica
  groups (a data-parallel node 0 with its followers, a multi-node engine: ``rolling.replica_groups``,
  the groups the rolling operations restart), and the edges: clients to the endpoint, each front
  door (router, proxy) to the groups it sends to, the KV-cache path from the prefill pool to the
  decode pool (labelled with the KV connector both sides share), followers joining node 0, and
  every other ``after`` wait (the MetaService's).
- ``topology_dot(model)``: its Graphviz source. Every label is an HTML-like label escaped here;
  node and cluster ids are generated (``s3``, ``cluster_g1``), never a host name.
- ``render_svg(source)``: ``dot -Tsvg``, reduced to the bare ``<svg>`` element (no XML prolog,
  doctype or comments) to inline in the page; a missing or failing ``dot`` is a reason, not an error.
- ``report_html(plan, groups, svg, problem)``: one self-contained page (inline CSS and SVG, no
  script, no external file), every text escaped with ``html.escape``, nothing that changes between
  two runs of the same plan (no timestamp, plan order throughout), so a re-run writes nothing.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess

from ._profiles import argv_flags
from ._rolling import replica_groups

REPORT_FILE = "report.html"
GRAPHVIZ_PACKAGE = "graphviz"
DOT_TIMEOUT = 60
FRONT_KINDS = ("router", "proxy")
POOL_LABELS = {"prefill": "prefill pool", "decode": "decode pool", "engine": "engines"}
# (fill, border) per role; the front doors share one.
STYLES = {
    "front": ("#cfe3ff", "#2f5f9e"),
    "metaservice": ("#fff2b3", "#9a7b00"),
    "prefill": ("#ffd9b3", "#b35c00"),
    "decode": ("#c9efc9", "#2e7d32"),
    "engine": ("#e3d4f7", "#5e35b1"),
    "other": ("#e8e8e8", "#555555"),
}
FONT = "Helvetica,Arial,sans-serif"
KV_COLOR = "#c62828"


def _key(host, svc):
    return "%s/%s" % (host, svc.get("name"))


def _style_key(svc):
    if svc.get("kind") in FRONT_KINDS:
        return "front"
    if svc.get("kind") == "metaservice":
        return "metaservice"
    return svc.get("role") if svc.get("role") in STYLES else "other"


def port_text(port):
    """``http 8000``, ``kv 36000-36015`` (a range of ``count`` ports)."""
    count = int(port.get("count") or 1)
    first = int(port["port"])
    return "%s %s" % (port.get("name"), first if count == 1 else "%d-%d" % (first, first + count - 1))


def wrap(items, width=44):
    """``items`` joined with commas into lines of about ``width`` characters (a node's port list)."""
    lines = []
    for item in items:
        if lines and len(lines[-1]) + len(item) + 2 <= width:
            lines[-1] += ", " + item
        else:
            lines.append(item)
    return lines


def rank_text(svc):
    """The service's place in its group: ``node 0, DP ranks 0-7 of 16``, ``headless follower, node 1``."""
    ranks = svc.get("ranks") or {}
    parts = []
    if "node_rank" in ranks:
        node = int(ranks["node_rank"])
        if node == 0:
            parts.append("node 0")
        elif svc.get("serves_http"):
            parts.append("node %d" % node)
        else:
            parts.append("headless follower, node %d" % node)
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


def kv_connectors(svc):
    """The KV connectors of a vLLM service's --kv-transfer-config, a MultiConnector's members expanded."""
    value = argv_flags(svc.get("argv") or []).get("kv-transfer-config")
    if not value:
        return []
    try:
        config = json.loads(value)
    except ValueError:
        return []
    out = []

    def walk(conf):
        if not isinstance(conf, dict):
            return
        name = conf.get("kv_connector")
        extra = conf.get("kv_connector_extra_config")
        members = (extra.get("connectors") if isinstance(extra, dict) else None) or []
        if name == "MultiConnector" and isinstance(members, list):
            for member in members:
                walk(member)
        elif isinstance(name, str) and name not in out:
            out.append(name)

    walk(config)
    return out


def kv_label(prefill, decode):
    """The KV path's connector: the ones both sides have (else each side's), e.g. ``NixlConnector``."""
    ours = [c for svc in prefill for c in kv_connectors(svc)]
    theirs = [c for svc in decode for c in kv_connectors(svc)]
    shared = [c for c in dict.fromkeys(ours) if c in theirs]
    if shared:
        return " + ".join(shared)
    sides = []
    if ours:
        sides.append("prefill " + " + ".join(dict.fromkeys(ours)))
    if theirs:
        sides.append("decode " + " + ".join(dict.fromkeys(theirs)))
    return ", ".join(sides)


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


def topology(plan, groups=None):
    """The picture as data: ``{"nodes", "clusters", "edges"}`` (see the module's docstring).

    Node: id, key (``host/service``), host, ip, service, kind, role, style, lines (label lines
    after the bold service name), cluster (innermost, or None). Cluster: id, label (lines),
    parent, kind (``pool`` or ``group``), role, members (node ids, own nodes only). Edge: tail,
    head, kind (``client``, ``route``, ``kv``, ``join``, ``after``), label, ltail, lhead (the
    cluster the edge is drawn to, for an edge to a whole pool or group).
    """
    hosts = plan.get("hosts") or {}
    services = {}
    nodes = []
    node_of = {}
    for host, data in hosts.items():
        entries = data.get("services") or []
        if not entries:
            nodes.append(
                {
                    "id": "h%d" % len(nodes),
                    "key": host,
                    "host": host,
                    "ip": data.get("ip"),
                    "service": None,
                    "kind": None,
                    "role": None,
                    "style": "other",
                    "lines": ["%s, no service planned" % data.get("ip")],
                    "cluster": None,
                }
            )
        for svc in entries:
            key = _key(host, svc)
            services[key] = (host, svc)
            lines = [host, data.get("ip") or "no address"] + wrap([port_text(p) for p in svc.get("ports") or []])
            if rank_text(svc):
                lines.append(rank_text(svc))
            node = {
                "id": "s%d" % len(nodes),
                "key": key,
                "host": host,
                "ip": data.get("ip"),
                "service": svc.get("name"),
                "kind": svc.get("kind"),
                "role": svc.get("role"),
                "style": _style_key(svc),
                "lines": lines,
                "cluster": None,
            }
            nodes.append(node)
            node_of[key] = node

    clusters = []
    pool_of_role = {}
    group_of = {}  # service key -> replica group
    cluster_of_group = {}  # group id -> cluster id (groups of more than one member)
    all_groups = replica_groups(plan)
    for group in all_groups:
        role = group.get("role") or "engine"
        if role not in pool_of_role:
            pool = {
                "id": "cluster_p%d" % len(pool_of_role),
                "label": [POOL_LABELS.get(role, "%s pool" % role)],
                "parent": None,
                "kind": "pool",
                "role": role,
                "members": [],
                "groups": [],
            }
            pool_of_role[role] = pool
            clusters.append(pool)
        pool = pool_of_role[role]
        pool["groups"].append(group)
        for member in group["members"]:
            group_of[member] = group
        if len(group["members"]) > 1:
            root = services[group["id"]][1]
            ranks = root.get("ranks") or {}
            if "dp_size" in ranks:
                label = "data-parallel group: DP %s on %d nodes" % (ranks["dp_size"], len(group["hosts"]))
            else:
                label = "one engine on %d nodes" % len(group["hosts"])
            rpc = [p for p in root.get("ports") or [] if p.get("name") == "dp-rpc"]
            detail = "node 0 %s" % services[group["id"]][0]
            if rpc:
                detail += ", DP RPC %s:%s" % (hosts[services[group["id"]][0]].get("ip"), rpc[0]["port"])
            cluster = {
                "id": "cluster_g%d" % len(cluster_of_group),
                "label": [label, detail],
                "parent": pool["id"],
                "kind": "group",
                "role": role,
                "members": [],
            }
            cluster_of_group[group["id"]] = cluster["id"]
            clusters.append(cluster)
            for member in group["members"]:
                node_of[member]["cluster"] = cluster["id"]
                cluster["members"].append(node_of[member]["id"])
        else:
            node_of[group["id"]]["cluster"] = pool["id"]
            pool["members"].append(node_of[group["id"]]["id"])
    for pool in pool_of_role.values():
        pool_groups = pool.pop("groups")
        count = len(pool_groups)
        hosts_in = {h for g in pool_groups for h in g["hosts"]}
        pool["label"].append(
            "%d replica group%s, %d host%s"
            % (count, "" if count == 1 else "s", len(hosts_in), "" if len(hosts_in) == 1 else "s")
        )

    cluster_by_id = {c["id"]: c for c in clusters}

    def target(key):
        """(node id, lhead) to draw an edge to ``key``'s whole replica group."""
        group = group_of.get(key)
        if group is None:
            return node_of[key]["id"], None
        return node_of[group["id"]]["id"], cluster_of_group.get(group["id"])

    edges = []
    seen = set()

    def add(tail, head, kind, label="", ltail=None, lhead=None, minlen=None):
        if (tail, head, kind) in seen:
            return
        seen.add((tail, head, kind))
        edges.append(
            {
                "tail": tail,
                "head": head,
                "kind": kind,
                "label": label,
                "ltail": ltail,
                "lhead": lhead,
                "minlen": minlen,
            }
        )

    endpoint = plan.get("endpoint") or {}
    entry = "%s/%s" % (endpoint.get("host"), endpoint.get("service"))
    client_node = None
    if entry in node_of:
        client_node = {"id": "clients", "label": "clients", "url": endpoint.get("url")}
        head, lhead = (node_of[entry]["id"], None) if node_of[entry]["kind"] in FRONT_KINDS else target(entry)
        add("clients", head, "client", "endpoint %s" % (endpoint.get("url") or ""), lhead=lhead)

    covered = set()  # (waiting service, what it waits for) drawn as something more specific than "after"
    fronts = [k for k, (_h, s) in services.items() if s.get("kind") in FRONT_KINDS]
    for front in fronts:
        fsvc = services[front][1]
        discovery = [p for p in fsvc.get("ports") or [] if p.get("name") == "discovery"]
        for group in all_groups:
            static = [m for m in group["members"] if m in (fsvc.get("after") or [])]
            registers = [m for m in group["members"] if front in (services[m][1].get("after") or [])]
            if not static and not registers:
                continue
            covered.update((front, m) for m in static)
            covered.update((m, front) for m in registers)
            head, lhead = target(group["id"])
            label = group.get("role") or ""
            if registers and not static:
                label += " (registers on %s)" % (port_text(discovery[0]) if discovery else "the router")
            # The decode pool a column further than the prefill pool, whose KV cache it receives.
            minlen = 2 if group.get("role") == "decode" and "prefill" in pool_of_role else None
            add(node_of[front]["id"], head, "route", label, lhead=lhead, minlen=minlen)

    # A replica group neither the clients nor a front door reach serves only the deployment and
    # k3_admin_networks (the firewall opens only the endpoint to k3_client_networks): say so.
    reached = {e["head"] for e in edges}
    for group in all_groups:
        root = node_of[group["id"]]
        if root["id"] not in reached and services[group["id"]][1].get("serves_http"):
            where = (
                cluster_by_id[cluster_of_group[group["id"]]]["label"]
                if group["id"] in cluster_of_group
                else root["lines"]
            )
            where.append("its own API, not behind the endpoint")

    prefill = [k for k, (_h, s) in services.items() if s.get("kind") == "vllm" and s.get("role") == "prefill"]
    decode = [k for k, (_h, s) in services.items() if s.get("kind") == "vllm" and s.get("role") == "decode"]
    if prefill and decode:
        connector = kv_label([services[k][1] for k in prefill], [services[k][1] for k in decode])
        add(
            node_of[group_of[prefill[0]]["id"]]["id"],
            node_of[group_of[decode[0]]["id"]]["id"],
            "kv",
            "KV cache" + (": %s" % connector if connector else ""),
            ltail=pool_of_role["prefill"]["id"],
            lhead=pool_of_role["decode"]["id"],
        )

    followers = {}
    for key, (_host, svc) in services.items():
        for root in svc.get("after_started") or []:
            if root in node_of:
                covered.add((key, root))
                followers.setdefault(root, []).append(key)
    for root, keys in followers.items():
        # Drawn from node 0 to the follower (node 0 left, its followers in one column to its right),
        # the arrow pointing back at node 0; one label per node 0. In reverse: with node 0's
        # ordering=out, dot then stacks the followers top down in node order (node 1 first).
        for key in reversed(keys):
            add(node_of[root]["id"], node_of[key]["id"], "join", "joins node 0" if key == keys[0] else "")
    for key, (_host, svc) in services.items():
        for dep in svc.get("after") or []:
            if dep not in node_of or (key, dep) in covered:
                continue
            # From what is waited for to the waiting service's whole group, the arrow pointing back.
            head, lhead = target(key)
            add(node_of[dep]["id"], head, "after", "waits for it (healthy)", lhead=lhead)

    return {"nodes": nodes, "clusters": clusters, "edges": edges, "clients": client_node}


def _label(text):
    """Text for a Graphviz HTML-like label: XML-escaped."""
    return html.escape(str(text), quote=True)


def _attrs(**attrs):
    return ", ".join("%s=%s" % (k, v) for k, v in attrs.items() if v is not None)


def _q(text):
    """A double-quoted DOT string."""
    return '"%s"' % str(text).replace("\\", "\\\\").replace('"', '\\"')


def topology_dot(model):
    """Graphviz source of a ``topology`` model (left to right: clients, front doors, pools)."""
    out = [
        "digraph kimi_k3 {",
        "  graph [%s];"
        % _attrs(
            rankdir="LR",
            compound="true",
            newrank="true",
            nodesep="0.25",
            ranksep="0.55",
            fontname=_q(FONT),
            fontsize="12",
            bgcolor=_q("white"),
            pad="0.2",
        ),
        # A wider margin than dot's: a browser's font may set the text a little wider than dot measured.
        "  node [%s];"
        % _attrs(shape="box", style=_q("rounded,filled"), fontname=_q(FONT), fontsize="12", margin=_q("0.2,0.06")),
        "  edge [%s];" % _attrs(fontname=_q(FONT), fontsize="10", color=_q("#444444"), fontcolor=_q("#333333")),
    ]
    if model.get("clients"):
        out.append(
            "  clients [%s];"
            % _attrs(
                label="<<B>clients</B>>",
                shape="oval",
                style=_q("filled"),
                fillcolor=_q("#ffffff"),
                color=_q("#333333"),
                id=_q("clients"),
                **{"class": _q("clients")},
            )
        )

    roots = {e["tail"] for e in model["edges"] if e["kind"] == "join"}

    def node_line(node, indent):
        fill, border = STYLES[node["style"]]
        rows = ["<B>%s</B>" % _label(node["service"] or node["host"])]
        rows += ['<FONT POINT-SIZE="10">%s</FONT>' % _label(line) for line in node["lines"]]
        follower = "follower" in " ".join(node["lines"])
        return "%s%s [%s];" % (
            indent,
            node["id"],
            _attrs(
                label="<%s>" % "<BR/>".join(rows),
                fillcolor=_q(fill),
                color=_q(border),
                style=_q("rounded,filled,dashed" if follower else "rounded,filled"),
                ordering=_q("out") if node["id"] in roots else None,
                id=_q("svc-%s" % node["id"]),
                **{"class": _q("service style-%s" % node["style"])},
            ),
        )

    children = {}
    for cluster in model["clusters"]:
        children.setdefault(cluster["parent"], []).append(cluster)
    nodes_of = {}
    for node in model["nodes"]:
        nodes_of.setdefault(node["cluster"], []).append(node)

    def emit(cluster, depth):
        indent = "  " * depth
        fill, border = STYLES.get(cluster["role"], STYLES["other"])
        out.append("%ssubgraph %s {" % (indent, cluster["id"]))
        out.append(
            "%s  graph [%s];"
            % (
                indent,
                _attrs(
                    label="<%s>"
                    % "<BR/>".join(
                        ["<B>%s</B>" % _label(cluster["label"][0])]
                        + ['<FONT POINT-SIZE="10">%s</FONT>' % _label(x) for x in cluster["label"][1:]]
                    ),
                    style=_q("rounded" if cluster["kind"] == "pool" else "rounded,dashed"),
                    color=_q(border),
                    bgcolor=_q("#fbfbfb" if cluster["kind"] == "pool" else "#ffffff"),
                    labeljust=_q("l"),
                    id=_q(cluster["id"]),
                    **{"class": _q("%s role-%s" % (cluster["kind"], cluster["role"]))},
                ),
            )
        )
        for node in nodes_of.get(cluster["id"], []):
            out.append(node_line(node, indent + "  "))
        for child in children.get(cluster["id"], []):
            emit(child, depth + 1)
        out.append("%s}" % indent)

    for node in nodes_of.get(None, []):
        out.append(node_line(node, "  "))
    for cluster in children.get(None, []):
        emit(cluster, 1)

    styles = {
        "client": {"penwidth": "1.6", "style": _q("bold")},
        "route": {"penwidth": "1.3"},
        "kv": {"penwidth": "2.4", "color": _q(KV_COLOR), "fontcolor": _q(KV_COLOR)},
        "join": {"style": _q("dashed"), "dir": "back", "arrowtail": "normal"},
        "after": {"style": _q("dotted"), "dir": "back", "arrowtail": "normal"},
    }
    for index, edge in enumerate(model["edges"]):
        label = "<B>%s</B>" % _label(edge["label"]) if edge["kind"] == "kv" else _label(edge["label"])
        out.append(
            "  %s -> %s [%s];"
            % (
                edge["tail"],
                edge["head"],
                _attrs(
                    label="<%s>" % label if edge["label"] else None,
                    ltail=edge["ltail"],
                    lhead=edge["lhead"],
                    minlen=edge.get("minlen"),
                    id=_q("edge-%s-%d" % (edge["kind"], index)),
                    **{"class": _q("edge-%s" % edge["kind"])},
                    **styles[edge["kind"]],
                ),
            )
        )
    out.append("}")
    return "\n".join(out) + "\n"


def inline_svg(text):
    """``dot -Tsvg`` output reduced to its ``<svg>`` element: no XML prolog, doctype or comments."""
    start = text.find("<svg")
    if start < 0:
        raise ValueError("no <svg> element in the output of dot")
    body = re.sub(r"<!--.*?-->\n?", "", text[start:], flags=re.S)
    return body.strip() + "\n"


def render_svg(source, dot=None, timeout=DOT_TIMEOUT):
    """``{"svg", "problem", "missing"}``: the picture, or why there is none (``dot`` not found or failing)."""
    binary = dot or shutil.which("dot")
    if not binary or not shutil.which(binary):
        return {"svg": None, "missing": True, "problem": "Graphviz's dot is not installed on the controller"}
    try:
        proc = subprocess.run(
            [binary, "-Tsvg"], input=source, capture_output=True, text=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"svg": None, "missing": False, "problem": "%s -Tsvg did not run: %s" % (binary, exc)}
    if proc.returncode:
        first = (proc.stderr.strip().splitlines() or ["no message"])[0]
        return {
            "svg": None,
            "missing": False,
            "problem": "%s -Tsvg failed (exit %d): %s" % (binary, proc.returncode, first),
        }
    try:
        return {"svg": inline_svg(proc.stdout), "missing": False, "problem": None}
    except ValueError as exc:
        return {"svg": None, "missing": False, "problem": str(exc)}


def start_order(plan):
    """``[(step, key, after, after_started)]``: a service's step is one past the last step it waits for."""
    services = {}
    for host, data in (plan.get("hosts") or {}).items():
        for svc in data.get("services") or []:
            services[_key(host, svc)] = svc
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


STYLE = """
body{font-family:Helvetica,Arial,sans-serif;color:#1b1b1b;background:#fff;margin:24px;line-height:1.4}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}
p.title{margin:0 0 12px;color:#444}
dl.facts{display:grid;grid-template-columns:max-content auto;gap:2px 14px;margin:0;font-size:14px}
dl.facts dt{font-weight:bold}dl.facts dd{margin:0}
code{font-family:"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:90%}
table{border-collapse:collapse;font-size:13px}th,td{border:1px solid #d5d5d5;padding:3px 8px;
text-align:left;vertical-align:top}th{background:#f1f1f1}
figure{margin:0}figure svg{max-width:100%;height:auto}
figcaption{font-size:12px;color:#555;margin-top:6px}
.note{border:1px solid #b35c00;background:#fff4e5;padding:8px 12px;max-width:60em}
details pre{font-size:11px;background:#f6f6f6;padding:8px;overflow:auto}
footer{margin-top:28px;font-size:12px;color:#666}
""".strip()


def _e(value):
    return html.escape("" if value is None else str(value), quote=True)


def _variant_text(value):
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("name"), str):
        return value["name"]
    return json.dumps(value, sort_keys=True)


def report_html(plan, groups=None, svg=None, problem=None, dot_source=None, missing=True):
    """The page: facts, the picture (or ``problem`` in its place), hosts, services, start order."""
    hosts = plan.get("hosts") or {}
    endpoint = plan.get("endpoint") or {}
    auth = plan.get("auth") or {}
    tls = plan.get("tls") or {}
    in_groups = host_groups(plan, groups)
    count = sum(len(d.get("services") or []) for d in hosts.values())
    facts = [("profile", "<code>%s</code>" % _e(plan.get("profile")))]
    if plan.get("variant") is not None:
        facts.append(("variant", "<code>%s</code>" % _e(_variant_text(plan.get("variant")))))
    facts += [
        ("platform", _e(plan.get("platform") or "none (no accelerator)")),
        (
            "endpoint",
            "<code>%s</code> (%s on %s)"
            % (_e(endpoint.get("url")), _e(endpoint.get("service")), _e(endpoint.get("host"))),
        ),
        ("model", "<code>%s</code>" % _e((plan.get("verify") or {}).get("served_model_name"))),
        (
            "API keys",
            _e(
                "required (%s accepted, from %s)" % (auth.get("keys"), auth.get("variable"))
                if auth.get("api_key")
                else "none (anyone who reaches the endpoint can use it)"
            ),
        ),
        ("TLS", _e("https on %s" % ", ".join(tls.get("services") or []) if tls.get("enabled") else "none")),
        (
            "size",
            _e(
                "%d host%s, %d service%s"
                % (len(hosts), "" if len(hosts) == 1 else "s", count, "" if count == 1 else "s")
            ),
        ),
    ]
    out = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>Kimi-K3 plan: %s</title>" % _e(plan.get("profile")),
        "<style>\n%s\n</style>" % STYLE,
        "</head>",
        "<body>",
        "<header>",
        "<h1>Kimi-K3 plan: <code>%s</code></h1>" % _e(plan.get("profile")),
        '<p class="title">%s</p>' % _e(plan.get("title")),
        '<dl class="facts">',
        *["<dt>%s</dt><dd>%s</dd>" % (_e(k), v) for k, v in facts],
        "</dl>",
        "</header>",
        '<section id="topology">',
        "<h2>Topology</h2>",
        "<figure>",
    ]
    if svg:
        out.append(svg.rstrip("\n"))
        out.append(
            "<figcaption>Clients enter at the endpoint; solid arrows: requests from the front door to"
            " each replica group of a pool; red: the KV cache from the prefill pool to the decode pool"
            " (its connector named); dashed: nodes joining their node 0 (dashed box: a headless"
            " follower); dotted: a service waiting for another to be healthy.</figcaption>"
        )
    else:
        out.append(
            '<p class="note" id="no-picture">No picture: %s. %s, then run playbooks/plan.yml again.'
            " The tables below are complete without it.</p>"
            % (
                _e(problem or "it was not made"),
                "Install the package <code>%s</code> on the controller (Debian: <code>apt-get install %s</code>)"
                % (GRAPHVIZ_PACKAGE, GRAPHVIZ_PACKAGE)
                if missing
                else "Check the controller's Graphviz (package <code>%s</code>)" % GRAPHVIZ_PACKAGE,
            )
        )
        if dot_source:
            out.append(
                "<details><summary>Graphviz source (<code>dot -Tsvg</code>)</summary><pre>%s</pre></details>"
                % _e(dot_source)
            )
    out += ["</figure>", "</section>"]

    out += [
        '<section id="hosts">',
        "<h2>Hosts</h2>",
        "<table>",
        "<thead><tr><th>host</th><th>address</th><th>groups</th><th>roles</th><th>services</th></tr></thead>",
        "<tbody>",
    ]
    for host, data in hosts.items():
        entries = data.get("services") or []
        roles = list(dict.fromkeys(s.get("role") for s in entries if s.get("role")))
        out.append(
            "<tr><td><code>%s</code></td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>"
            % (
                _e(host),
                _e(data.get("ip")),
                _e(", ".join(in_groups.get(host) or []) or "-"),
                _e(", ".join(roles) or "-"),
                _e(", ".join(s.get("name") for s in entries) or "-"),
            )
        )
    out += ["</tbody>", "</table>", "</section>"]

    out += [
        '<section id="services">',
        "<h2>Services per host</h2>",
        "<table>",
        "<thead><tr><th>host</th><th>service</th><th>kind</th><th>role</th><th>unit</th><th>runs</th>"
        "<th>place</th><th>ports</th></tr></thead>",
        "<tbody>",
    ]
    for host, data in hosts.items():
        for svc in data.get("services") or []:
            runs = ("image %s" % svc["image"]) if svc.get("image") else "on the host"
            out.append(
                "<tr><td><code>%s</code></td><td><code>%s</code></td><td>%s</td><td>%s</td><td><code>%s</code></td>"
                "<td>%s</td><td>%s</td><td>%s</td></tr>"
                % (
                    _e(host),
                    _e(svc.get("name")),
                    _e(svc.get("kind")),
                    _e(svc.get("role")),
                    _e("%s.service" % svc["unit"] if svc.get("unit") else "-"),
                    _e(runs),
                    _e(rank_text(svc) or "-"),
                    _e(", ".join(port_text(p) for p in svc.get("ports") or []) or "-"),
                )
            )
    out += ["</tbody>", "</table>", "</section>"]

    out += [
        '<section id="start-order">',
        "<h2>Start order</h2>",
        "<p>From each service's <code>after</code> (started once those are healthy) and"
        " <code>after_started</code> (once those have started): a service's step is one past the"
        " last step it waits for.</p>",
        "<table>",
        "<thead><tr><th>step</th><th>service</th><th>once healthy</th><th>once started</th></tr></thead>",
        "<tbody>",
    ]
    for step, key, after, started in start_order(plan):
        out.append(
            "<tr><td>%d</td><td><code>%s</code></td><td>%s</td><td>%s</td></tr>"
            % (step, _e(key), _e(", ".join(after) or "-"), _e(", ".join(started) or "-"))
        )
    out += [
        "</tbody>",
        "</table>",
        "</section>",
        "<footer>Written by kimi_k3.serving's playbooks/plan.yml beside plan.json (plan version %s), from"
        " the same plan; the picture drawn by Graphviz.</footer>" % _e(plan.get("version")),
        "</body>",
        "</html>",
    ]
    return "\n".join(out) + "\n"


def report_file(plan, groups=None, dot=None):
    """``(html, warning)`` for the plan action: the page, and a warning naming the package when the
    picture could not be made (the page is written either way, with a note in the picture's place)."""
    source = topology_dot(topology(plan, groups))
    result = render_svg(source, dot=dot)
    warning = None
    if result["problem"]:
        fix = (
            "install the package %s on the controller (Debian: apt-get install %s)"
            if result["missing"]
            else "check the controller's Graphviz (package %s; Debian: apt-get install --reinstall %s)"
        ) % (GRAPHVIZ_PACKAGE, GRAPHVIZ_PACKAGE)
        warning = "%s was written without its topology picture: %s. Fix: %s, then run the plan again" % (
            REPORT_FILE,
            result["problem"],
            fix,
        )
    page = report_html(
        plan, groups, svg=result["svg"], problem=result["problem"], dot_source=source, missing=result["missing"]
    )
    return page, warning
