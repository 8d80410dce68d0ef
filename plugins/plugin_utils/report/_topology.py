# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The picture of the cluster as data: ``topology(plan)`` (report/_dot.py draws it).

One node per planned service (every host named; a host without a service gets a node too), the
clients' entry, a cluster per pool (prefill, decode, engines) holding the replica groups (a
data-parallel node 0 with its followers, a multi-node engine: ``rolling.replica_groups``, the groups
the rolling operations restart), and the edges: clients to the endpoint, each front door (router,
proxy) to the groups it sends to, the KV-cache path from the prefill pool to the decode pool
(labelled with the KV connector both sides share), followers joining node 0, and every other
``after`` wait (the MetaService's).

Ids are generated in plan order (``s3``, ``cluster_g1``), never a host name, so the same plan
always gives the same picture.
"""

from __future__ import annotations

import json
from typing import NamedTuple

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations._rolling import replica_groups
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._profiles import argv_flags
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.report._model import port_text, rank_text, service_key

FRONT_KINDS = ("router", "proxy")
POOL_LABELS = {"prefill": "prefill pool", "decode": "decode pool", "engine": "engines"}
# A node's style: a front door (router, proxy, the nginx front door), the MetaService, its role, else
# "other". report/_dot.py gives each its colours.
STYLE_KEYS = ("front", "metaservice", "prefill", "decode", "engine", "other")
NO_GROUP_API = "its own API, not behind the endpoint"


class Edge(NamedTuple):
    """An edge of the picture; ``ltail``/``lhead``: the cluster it is drawn from/to, if a whole one."""

    tail: str
    head: str
    kind: str  # client, door (the front door to what it guards), route, kv, join, after
    label: str = ""
    ltail: str | None = None
    lhead: str | None = None
    minlen: int | None = None


def style_key(svc):
    """The service's entry of ``STYLE_KEYS``."""
    if svc.get("kind") in FRONT_KINDS or svc.get("kind") == "front_door":
        return "front"
    if svc.get("kind") == "metaservice":
        return "metaservice"
    return svc.get("role") if svc.get("role") in STYLE_KEYS else "other"


def wrap(items, width=44):
    """``items`` joined with commas into lines of about ``width`` characters (a node's port list)."""
    lines = []
    for item in items:
        if lines and len(lines[-1]) + len(item) + 2 <= width:
            lines[-1] += ", " + item
        else:
            lines.append(item)
    return lines


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
    _walk_connectors(config, out)
    return out


def _walk_connectors(conf, out):
    if not isinstance(conf, dict):
        return
    name = conf.get("kv_connector")
    extra = conf.get("kv_connector_extra_config")
    members = (extra.get("connectors") if isinstance(extra, dict) else None) or []
    if name == "MultiConnector" and isinstance(members, list):
        for member in members:
            _walk_connectors(member, out)
    elif isinstance(name, str) and name not in out:
        out.append(name)


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


def topology(plan, groups=None):
    """The picture as data: ``{"nodes", "clusters", "edges", "clients"}`` (see the module's docstring).

    Node: id, key (``host/service``), host, ip, service, kind, role, style, lines (label lines
    after the bold service name), cluster (innermost, or None). Cluster: id, label (lines),
    parent, kind (``pool`` or ``group``), role, members (node ids, own nodes only). Edge: tail,
    head, kind (``client``, ``door``: the front door to what it guards, ``route``, ``kv``, ``join``,
    ``after``), label, ltail, lhead (the cluster the edge is drawn to, for an edge to a whole pool
    or group), minlen. ``groups`` (the inventory's) is not needed: the plan says it all.
    """
    del groups
    return _Topology(plan).build()


class _Topology:
    """One ``topology`` call: the steps share the services, nodes and groups found so far."""

    def __init__(self, plan):
        self.plan = plan
        self.hosts = plan.get("hosts") or {}
        self.services = {}  # service key -> (host, service)
        self.nodes = []
        self.node_of = {}  # service key -> node
        self.clusters = []
        self.pool_of_role = {}
        self.groups_of_pool = {}  # role -> its replica groups
        self.group_of = {}  # service key -> replica group
        self.cluster_of_group = {}  # group id -> cluster id (groups of more than one member)
        self.all_groups = []
        self.edges = []
        self.seen = set()
        # (waiting service, what it waits for) drawn as something more specific than "after"
        self.covered = set()
        self.client_node = None

    def build(self):
        # In this order: mark_own_api looks at the edges drawn before it (the clients', the routes').
        self.add_nodes()
        self.add_clusters()
        self.add_client_edges()
        self.add_route_edges()
        self.mark_own_api()
        self.add_kv_edge()
        self.add_join_edges()
        self.add_after_edges()
        return {"nodes": self.nodes, "clusters": self.clusters, "edges": self.edges, "clients": self.client_node}

    # ---------------------------------------------------------------- nodes and clusters
    def add_nodes(self):
        for host, data in self.hosts.items():
            # The exporters and group guards (beside the serving) are in the services table, not drawn.
            entries = [s for s in data.get("services") or [] if s.get("kind") not in ("exporter", "guard")]
            if not entries:
                self.nodes.append(self._node(host, data, None, ["%s, no service planned" % data.get("ip")]))
            for svc in entries:
                lines = [host, data.get("ip") or "no address"] + wrap([port_text(p) for p in svc.get("ports") or []])
                if rank_text(svc):
                    lines.append(rank_text(svc))
                node = self._node(host, data, svc, lines)
                self.nodes.append(node)
                self.services[node["key"]] = (host, svc)
                self.node_of[node["key"]] = node

    def _node(self, host, data, svc, lines):
        """A service's node (``s3``), or a host's without a service (``svc`` None: ``h3``)."""
        svc_get = (svc or {}).get
        return {
            "id": "%s%d" % ("h" if svc is None else "s", len(self.nodes)),
            "key": host if svc is None else service_key(host, svc),
            "host": host,
            "ip": data.get("ip"),
            "service": svc_get("name"),
            "kind": svc_get("kind"),
            "role": svc_get("role"),
            "style": "other" if svc is None else style_key(svc),
            "lines": lines,
            "cluster": None,
        }

    def add_clusters(self):
        self.all_groups = replica_groups(self.plan)
        for group in self.all_groups:
            pool = self._pool(group.get("role") or "engine")
            self.groups_of_pool[pool["role"]].append(group)
            for member in group["members"]:
                self.group_of[member] = group
            if len(group["members"]) > 1:
                self._group_cluster(group, pool)
            else:
                self.node_of[group["id"]]["cluster"] = pool["id"]
                pool["members"].append(self.node_of[group["id"]]["id"])
        for role, pool in self.pool_of_role.items():
            pool_groups = self.groups_of_pool[role]
            count = len(pool_groups)
            hosts_in = {h for g in pool_groups for h in g["hosts"]}
            pool["label"].append(
                "%d replica group%s, %d host%s"
                % (count, "" if count == 1 else "s", len(hosts_in), "" if len(hosts_in) == 1 else "s")
            )

    def _pool(self, role):
        if role not in self.pool_of_role:
            pool = {
                "id": "cluster_p%d" % len(self.pool_of_role),
                "label": [POOL_LABELS.get(role, "%s pool" % role)],
                "parent": None,
                "kind": "pool",
                "role": role,
                "members": [],
            }
            self.pool_of_role[role] = pool
            self.groups_of_pool[role] = []
            self.clusters.append(pool)
        return self.pool_of_role[role]

    def _group_cluster(self, group, pool):
        root_host, root = self.services[group["id"]]
        ranks = root.get("ranks") or {}
        if "dp_size" in ranks:
            label = "data-parallel group: DP %s on %d nodes" % (ranks["dp_size"], len(group["hosts"]))
        else:
            label = "one engine on %d nodes" % len(group["hosts"])
        rpc = [p for p in root.get("ports") or [] if p.get("name") == "dp-rpc"]
        detail = "node 0 %s" % root_host
        if rpc:
            detail += ", DP RPC %s:%s" % (self.hosts[root_host].get("ip"), rpc[0]["port"])
        cluster = {
            "id": "cluster_g%d" % len(self.cluster_of_group),
            "label": [label, detail],
            "parent": pool["id"],
            "kind": "group",
            "role": pool["role"],
            "members": [],
        }
        self.cluster_of_group[group["id"]] = cluster["id"]
        self.clusters.append(cluster)
        for member in group["members"]:
            self.node_of[member]["cluster"] = cluster["id"]
            cluster["members"].append(self.node_of[member]["id"])

    # ---------------------------------------------------------------- edges
    def add(self, edge):
        """Add ``edge`` (an ``Edge``) unless one of its kind joins the same two ends already."""
        if (edge.tail, edge.head, edge.kind) in self.seen:
            return
        self.seen.add((edge.tail, edge.head, edge.kind))
        self.edges.append(edge._asdict())

    def target(self, key):
        """(node id, lhead) to draw an edge to ``key``'s whole replica group."""
        group = self.group_of.get(key)
        if group is None:
            return self.node_of[key]["id"], None
        return self.node_of[group["id"]]["id"], self.cluster_of_group.get(group["id"])

    def add_client_edges(self):
        """Clients to the endpoint, and the front door on to what it guards."""
        endpoint = self.plan.get("endpoint") or {}
        entry = "%s/%s" % (endpoint.get("host"), endpoint.get("service"))
        if entry not in self.node_of:
            return
        self.client_node = {"id": "clients", "label": "clients", "url": endpoint.get("url")}
        backend = endpoint.get("backend")
        first = "%s/%s" % (backend["host"], backend["service"]) if backend else entry
        client_label = "endpoint %s" % (endpoint.get("url") or "")
        if backend and first in self.node_of:
            # Clients reach the front door, and only through it the router, proxy or node 0.
            self.add(Edge("clients", self.node_of[entry]["id"], "client", client_label))
            self.covered.add((entry, first))
            tail, kind, label = self.node_of[entry]["id"], "door", "the allowed routes"
        else:
            tail, kind, label = "clients", "client", client_label
        if self.node_of[first]["kind"] in FRONT_KINDS:
            head, lhead = self.node_of[first]["id"], None
        else:
            head, lhead = self.target(first)
        self.add(Edge(tail, head, kind, label, lhead=lhead))

    def add_route_edges(self):
        """Each router or proxy to the replica groups it sends to (listed, or registering on it)."""
        for front, (_host, fsvc) in self.services.items():
            if fsvc.get("kind") not in FRONT_KINDS:
                continue
            discovery = [p for p in fsvc.get("ports") or [] if p.get("name") == "discovery"]
            for group in self.all_groups:
                static = [m for m in group["members"] if m in (fsvc.get("after") or [])]
                registers = [m for m in group["members"] if front in (self.services[m][1].get("after") or [])]
                if not static and not registers:
                    continue
                self.covered.update((front, m) for m in static)
                self.covered.update((m, front) for m in registers)
                head, lhead = self.target(group["id"])
                label = group.get("role") or ""
                if registers and not static:
                    label += " (registers on %s)" % (port_text(discovery[0]) if discovery else "the router")
                # The decode pool a column further than the prefill pool, whose KV cache it receives.
                minlen = 2 if group.get("role") == "decode" and "prefill" in self.pool_of_role else None
                self.add(Edge(self.node_of[front]["id"], head, "route", label, lhead=lhead, minlen=minlen))

    def mark_own_api(self):
        """A replica group neither the clients nor a front door reach serves only the deployment and
        k3_admin_networks (the firewall opens only the endpoint to k3_client_networks): say so."""
        reached = {e["head"] for e in self.edges}
        clusters = {c["id"]: c for c in self.clusters}
        for group in self.all_groups:
            root = self.node_of[group["id"]]
            if root["id"] in reached or not self.services[group["id"]][1].get("serves_http"):
                continue
            if group["id"] in self.cluster_of_group:
                clusters[self.cluster_of_group[group["id"]]]["label"].append(NO_GROUP_API)
            else:
                root["lines"].append(NO_GROUP_API)

    def add_kv_edge(self):
        """The KV cache from the prefill pool to the decode pool, named by its connector."""
        prefill, decode = self._vllm("prefill"), self._vllm("decode")
        if not (prefill and decode):
            return
        connector = kv_label([self.services[k][1] for k in prefill], [self.services[k][1] for k in decode])
        self.add(
            Edge(
                self.node_of[self.group_of[prefill[0]]["id"]]["id"],
                self.node_of[self.group_of[decode[0]]["id"]]["id"],
                "kv",
                "KV cache" + (": %s" % connector if connector else ""),
                ltail=self.pool_of_role["prefill"]["id"],
                lhead=self.pool_of_role["decode"]["id"],
            )
        )

    def _vllm(self, role):
        return [k for k, (_h, s) in self.services.items() if s.get("kind") == "vllm" and s.get("role") == role]

    def add_join_edges(self):
        """Followers joining their node 0 (``after_started``)."""
        followers = {}
        for key, (_host, svc) in self.services.items():
            for root in svc.get("after_started") or []:
                if root in self.node_of:
                    self.covered.add((key, root))
                    followers.setdefault(root, []).append(key)
        for root, keys in followers.items():
            # Drawn from node 0 to the follower (node 0 left, its followers in one column to its right),
            # the arrow pointing back at node 0; one label per node 0. In reverse: with node 0's
            # ordering=out, dot then stacks the followers top down in node order (node 1 first).
            for key in reversed(keys):
                label = "joins node 0" if key == keys[0] else ""
                self.add(Edge(self.node_of[root]["id"], self.node_of[key]["id"], "join", label))

    def add_after_edges(self):
        """Every other ``after`` wait (the MetaService's, say)."""
        for key, (_host, svc) in self.services.items():
            for dep in svc.get("after") or []:
                if dep not in self.node_of or (key, dep) in self.covered:
                    continue
                # From what is waited for to the waiting service's whole group, the arrow pointing back.
                head, lhead = self.target(key)
                self.add(Edge(self.node_of[dep]["id"], head, "after", "waits for it (healthy)", lhead=lhead))
