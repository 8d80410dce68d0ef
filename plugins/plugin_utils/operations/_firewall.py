# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The nftables table of one host, from the plan: default deny, each port open only to who uses it.

One table of the collection's own (``inet kimi_k3``), replaced atomically as a whole by ``nft -f``;
the site's other tables are never touched. Its input chain drops every packet it does not accept
(a packet must pass every base chain of the hook, so the site's own tables can only narrow it):

- loopback, the answers to the host's own connections (conntrack ``established,related``), the
  ICMP messages that keep IP working (unreachable, too big, time exceeded, IPv6 neighbour
  discovery) and pings from the deployment and the admin networks;
- SSH (``ssh_ports``, the port Ansible uses) from ``k3_admin_networks`` only; preflight refuses a
  host whose rules would not admit the controller's own SSH session;
- the exporters' ports (node and accelerator metrics) from the monitoring hosts (plan
  ``monitoring.hosts``), ``k3_admin_networks`` and the host itself; on a monitoring host,
  Prometheus' and Alertmanager's ports (``monitoring_ports``) from the same; where there are two
  or more monitoring hosts, Alertmanager's cluster port (``gossip_ports``, its peers' mutual TLS)
  from the other monitoring hosts only;
- each planned port from the hosts the plan says connect to it (the preflight's connection list:
  health waits, a router's requests, registrations, data-parallel joins, KV-cache pulls, the
  MetaService), from the monitoring hosts and the admin networks (scrapes, verify, status), the
  endpoint's port also from ``k3_client_networks``; anyone else to a planned port gets a TCP reset;
- the members of a multi-node engine group take every port from each other (their engines'
  ZMQ, NCCL and Gloo sockets listen on ports chosen at start), and no other host does;
- on every host of the deployment, the BitTorrent transfers of checkpoints and images and the
  site's image mirror (``transfer_ports``: the seed's tracker, every node's peer ports and the
  mirror's port, TCP and UDP) and the fabric
  check's iperf3 port (``fabric_ports``) from the deployment's hosts only;
- what the inventory adds (``allow``: ``{ports, proto, from}``), e.g. a site's agent on the host;
- everything else is dropped.
"""

from __future__ import annotations

import ipaddress
import re

from ansible_collections.kimi_k3.serving.plugins.module_utils.preflight_connections import connections
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability._alertmanager_cluster import peering
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations._rolling import replica_groups
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _variables as variables

TABLE = "kimi_k3"
# The names an ``allow`` entry's ``from`` may use besides addresses and networks.
NAMED_SOURCES = ("deployment", "admins", "clients", "monitoring")
_REFUSAL = {"tcp": "reject with tcp reset", "udp": "reject"}
_ICMP = "icmp type { destination-unreachable, time-exceeded, parameter-problem } accept"
_ICMP6 = (
    "icmpv6 type { destination-unreachable, packet-too-big, time-exceeded, parameter-problem, "
    "nd-router-advert, nd-neighbor-solicit, nd-neighbor-advert, mld-listener-query } accept"
)


class FirewallError(ValueError):
    """A network list, a port list or an allow entry the table cannot use."""


def networks(value, variable):
    """Addresses/networks (``10.0.0.0/8``, ``192.0.2.7``, IPv6 too) as ip_network objects.

    The planner refuses bad lists (k3_client_networks, k3_admin_networks are declared with type
    ``networks``); the same check guards a role variable set past the planner.
    """
    if value in (None, "", []):
        return []
    try:
        variables.check_networks(value)
    except variables.Invalid as exc:
        raise FirewallError("%s: %s; expected %s" % (variable, exc.message, exc.expected)) from None
    return [ipaddress.ip_network(item.strip(), strict=False) for item in value]


def _port_ranges(ports):
    spans = sorted({(p["port"], p["port"] + p.get("count", 1) - 1) for p in ports})
    return ["%d" % a if a == b else "%d-%d" % (a, b) for a, b in spans]


def port_list(ports, variable):
    """``[6969, "6881-6889"]`` -> port dicts (``{port, count}``); FirewallError for anything else."""
    out = []
    for item in ports or []:
        match = re.match(r"^(\d+)(?:-(\d+))?$", str(item))
        first, last = (int(match.group(1)), int(match.group(2) or match.group(1))) if match else (0, 0)
        if not 0 < first <= last < 65536:
            raise FirewallError("%s: %r is not a port or a range a-b" % (variable, item))
        out.append({"port": first, "count": last - first + 1})
    return out


def _elements(nets):
    return ", ".join(str(n) if n.prefixlen != n.max_prefixlen else str(n.network_address) for n in nets)


def _net(ip):
    return ipaddress.ip_network(ip)


def _family(nets, version):
    """The networks of one IP version, once each, in address order."""
    return sorted({n for n in nets if n.version == version}, key=lambda n: (n.network_address, n.prefixlen))


class _Sources:
    """The named address sets of one host's table (``admins4``, ``deployment6`` ...)."""

    def __init__(self, sets):
        self.sets = dict(sets)

    def declarations(self):
        lines = []
        for name, nets in self.sets.items():
            for version in (4, 6):
                chosen = _family(nets, version)
                if chosen:
                    lines += [
                        "  set %s%d {" % (name, version),
                        "    type %s; flags interval; auto-merge;" % ("ipv4_addr" if version == 4 else "ipv6_addr"),
                        "    elements = { %s }" % _elements(chosen),
                        "  }",
                    ]
        return lines

    def matches(self, name):
        """The ``ip saddr @name4`` / ``ip6 saddr @name6`` matches of the set's non-empty families."""
        nets = self.sets.get(name) or []
        return [
            "%s saddr @%s%d" % (match, name, v)
            for v, match in ((4, "ip"), (6, "ip6"))
            if any(n.version == v for n in nets)
        ]


def _inline(nets):
    """``ip saddr { a, b }`` / ``ip6 saddr { .. }`` matches of a list of addresses, one per family."""
    out = []
    for version, match in ((4, "ip"), (6, "ip6")):
        chosen = _family(nets, version)
        if chosen:
            out.append("%s saddr { %s }" % (match, _elements(chosen)))
    return out


def _accept(proto, ports, sources, comment):
    if not ports or not sources:
        return []
    return ['    %s dport { %s } %s accept comment "%s"' % (proto, ", ".join(ports), s, comment) for s in sources]


def _refuse(proto, ports):
    return ["    %s dport { %s } %s" % (proto, ", ".join(ports), _REFUSAL[proto])] if ports else []


def _pings(sources):
    """Echo requests from the deployment and the admin networks."""
    return [
        "    %s type echo-request %s accept" % ("icmp" if match.startswith("ip ") else "icmpv6", match)
        for match in sources.matches("deployment") + sources.matches("admins")
    ]


def _ips(plan):
    return {h: d["ip"] for h, d in (plan.get("hosts") or {}).items()}


def _users(plan, host):
    """{port: [source addresses]} of ``host``'s planned ports, from the planned connections."""
    ips = _ips(plan)
    users = {}
    for conn in connections(plan):
        if conn["dst"] == host and conn["src"] in ips:
            users.setdefault(int(conn["port"]), set()).add(_net(ips[conn["src"]]))
    return users


def _peers(plan, host):
    """The other members' addresses of every multi-node engine group ``host`` is part of."""
    ips = _ips(plan)
    peers = set()
    for group in replica_groups(plan):
        if host in group["hosts"] and len(group["hosts"]) > 1:
            peers |= {_net(ips[h]) for h in group["hosts"] if h != host}
    return sorted(peers, key=lambda n: (n.version, n.network_address))


def _gossip(plan, host, ports_of):
    """(ports, lines): Alertmanager's cluster port on a monitoring host, from the other monitoring
    hosts only, where there are two or more (its peers, over mutual TLS); otherwise nothing."""
    # Whether the monitoring stage peers also takes its TLS settings; an open port nothing listens on
    # behind is dropped anyway, so the firewall asks only about the members.
    cluster = peering(plan, host, tls_ready=True)
    if cluster is None:
        return [], []
    ports = _port_ranges(port_list(ports_of.get("gossip"), "firewall_gossip_ports"))
    others = [_net(ip) for ip in cluster["peers"]]
    return ports, _accept("tcp", ports, _inline(others), "Alertmanager's cluster: the other monitoring hosts")


def _planned_lines(plan, host, ports, endpoint_ports, sources):
    """Each planned port from its users, the operators, (the endpoint) the clients; then a reset."""
    users = _users(plan, host)
    by_sources = {}
    for entry in ports:
        for number in range(entry["port"], entry["port"] + entry.get("count", 1)):
            key = tuple(sorted(users.get(number, ()), key=lambda n: (n.version, n.network_address)))
            if key:
                by_sources.setdefault(key, []).append({"port": number})
    lines = []
    for nets, numbers in by_sources.items():
        lines += _accept("tcp", _port_ranges(numbers), _inline(list(nets)), "the hosts the plan connects")
    lines += _accept("tcp", [str(p) for p in endpoint_ports], sources.matches("clients"), "clients")
    lines += _accept("tcp", _port_ranges(ports), sources.matches("operators"), "monitoring and admins")
    return lines


def _allow_lines(allow, sources):
    """The inventory's own additions: ``[{ports: [..], proto: tcp|udp, from: [net | name]}]``."""
    lines = []
    for index, entry in enumerate(allow or []):
        where = "k3_firewall_allow[%d]" % index
        if not isinstance(entry, dict) or set(entry) - {"ports", "proto", "from", "comment"}:
            raise FirewallError("%s: %r is not {ports, proto, from}" % (where, entry))
        proto = entry.get("proto", "tcp")
        if proto not in _REFUSAL:
            raise FirewallError("%s: proto %r is not tcp or udp" % (where, proto))
        ports = _port_ranges(port_list(entry.get("ports"), where + ".ports"))
        named = [s for s in entry.get("from") or [] if s in NAMED_SOURCES]
        nets = networks([s for s in entry.get("from") or [] if s not in NAMED_SOURCES], where + ".from")
        if not ports or not (named or nets):
            raise FirewallError("%s: ports and from are both needed" % where)
        matches = [m for name in named for m in sources.matches("operators" if name == "monitoring" else name)]
        comment = str(entry.get("comment") or "k3_firewall_allow").replace('"', "'")
        lines += _accept(proto, ports, matches + _inline(nets), comment)
    return lines


def host_rules(plan, host, client_networks=(), admin_networks=(), ports=None, allow=()):
    """``{"ports": [...], "endpoint_ports": [...], "ruleset": text}`` for ``host`` of ``plan``.

    ``ports``: ``{"ssh": [22], "monitoring": [9090, 9093], "gossip": [9094], "transfers": [6969,
    "6881-6889"], "fabric": [5201]}`` (each a list of ports or ranges ``a-b``; SSH defaults to 22, the
    others to none).
    """
    ports_of = dict({"ssh": [22]}, **(ports or {}))
    clients = networks(list(client_networks), "k3_client_networks")
    admins = networks(list(admin_networks), "k3_admin_networks")
    watching = [m for m in (plan.get("monitoring") or {}).get("hosts") or [] if m["host"] == host]
    data = (plan.get("hosts") or {}).get(host)
    if data is None and watching:
        data = {"ip": watching[0]["ip"], "services": []}
    if data is None:
        return {"ports": [], "endpoint_ports": [], "ruleset": ""}
    serving = host in (plan.get("hosts") or {})
    planned_ports = [p for svc in data["services"] if svc["kind"] != "exporter" for p in svc.get("ports") or []]
    metrics = [p for svc in data["services"] if svc["kind"] == "exporter" for p in svc.get("ports") or []]
    if watching:
        metrics += port_list(ports_of.get("monitoring"), "firewall_monitoring_ports")
    transfers = _port_ranges(port_list(ports_of.get("transfers"), "firewall_transfer_ports")) if serving else []
    fabric = _port_ranges(port_list(ports_of.get("fabric"), "firewall_fabric_ports")) if serving else []
    endpoint = plan.get("endpoint") or {}
    endpoint_ports = [int(endpoint["port"])] if endpoint.get("host") == host and endpoint.get("port") else []
    watchers = [_net(m["ip"]) for m in (plan.get("monitoring") or {}).get("hosts") or []]
    sources = _Sources(
        {
            "admins": admins,
            "deployment": [_net(d["ip"]) for d in plan["hosts"].values()],
            "clients": clients,
            "operators": watchers + admins + [_net(data["ip"])],
        }
    )
    planned = _port_ranges(planned_ports)
    exported = _port_ranges(metrics)
    ssh = _port_ranges(port_list(ports_of.get("ssh"), "firewall_ssh_ports"))
    peers = _peers(plan, host)
    gossip, gossip_lines = _gossip(plan, host, ports_of)
    lines = [
        "#!/usr/sbin/nft -f",
        "# kimi_k3.serving: %s (profile %s): each planned port open to who uses it, the rest dropped."
        % (host, plan["profile"]),
        "# Written by the firewall role from the plan; edit the inventory (k3_client_networks,",
        "# k3_admin_networks, k3_firewall_allow, k3_firewall) and re-run instead. Other tables are not touched.",
        "table inet %s" % TABLE,
        "delete table inet %s" % TABLE,
        "table inet %s {" % TABLE,
        *sources.declarations(),
        "  chain input {",
        "    type filter hook input priority filter - 10; policy drop;",
        '    iif "lo" accept',
        "    ct state established,related accept",
        "    ct state invalid drop",
        "    " + _ICMP,
        "    " + _ICMP6,
        *_pings(sources),
        *_accept("tcp", ssh, sources.matches("admins"), "ssh: the admin networks"),
        # (not to the engine group's members below: SSH is the admins' only)
        *(["    tcp dport { %s } drop" % ", ".join(ssh)] if ssh else []),
        *_accept("tcp", exported, sources.matches("operators"), "metrics: monitoring and admins"),
        *_refuse("tcp", exported),
        *_planned_lines(plan, host, planned_ports, endpoint_ports, sources),
        *['    %s accept comment "the other members of its engine group"' % m for m in _inline(peers)],
        *_refuse("tcp", planned),
    ]
    for proto in ("tcp", "udp"):
        lines += _accept(proto, transfers, sources.matches("deployment"), "transfers: the deployment")
        lines += _refuse(proto, transfers)
    lines += _accept("tcp", fabric, sources.matches("deployment"), "fabric check: the deployment")
    lines += gossip_lines
    lines += _allow_lines(allow, sources)
    lines += ["  }", "}", ""]
    return {
        "ports": planned + exported + transfers + gossip,
        "endpoint_ports": endpoint_ports,
        "ruleset": "\n".join(lines),
    }
