# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The nftables table of one host, from the plan: only the planned ports, only from who needs them.

One table of the collection's own (``inet kimi_k3``), replaced atomically as a whole by ``nft -f``;
the site's other tables are never touched. Its input chain accepts every other packet (SSH
included): it only decides about the ports the plan gives this host's services.

- every planned port of the host: from the deployment's hosts (every plan host's address), the
  host itself, the inventory's monitoring hosts (plan ``monitoring.hosts``: they scrape every
  service's metrics) and ``k3_admin_networks`` (e.g. the Ansible controller);
- the exporters' ports (node and accelerator metrics) only from the monitoring hosts,
  ``k3_admin_networks`` and the host itself;
- on a monitoring host, Prometheus' and Alertmanager's ports (``monitoring_ports``) from the same
  (Prometheus sends alerts to every monitoring host's Alertmanager);
- on every host of the deployment, the ports of the checkpoints' and images' BitTorrent transfers
  (``transfer_ports``: the seed's tracker and every node's peer ports, TCP and UDP) from the
  deployment's hosts only: the pieces go between them, never to anyone else;
- the endpoint's port (where clients send requests) also from ``k3_client_networks``;
- anything else to those ports is refused with a TCP reset.
"""

from __future__ import annotations

import ipaddress
import re

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _variables as variables

TABLE = "kimi_k3"


class FirewallError(ValueError):
    """A network list that is not a list of addresses or networks."""


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


def _elements(nets):
    return ", ".join(str(n) if n.prefixlen != n.max_prefixlen else str(n.network_address) for n in nets)


_REFUSAL = {"tcp": "reject with tcp reset", "udp": "reject"}


def _admitted(ports, sources, names, proto="tcp"):
    """The chain's lines for ``ports``: each (set, ports) source accepted, then a refusal for the rest."""
    if not ports:
        return []
    lines = []
    for name, admitted in sources:
        for family, match in (("4", "ip"), ("6", "ip6")):
            if name + family in names:
                lines.append(
                    "    %s dport { %s } %s saddr @%s%s accept" % (proto, ", ".join(admitted), match, name, family)
                )
    return lines + ["    %s dport { %s } %s" % (proto, ", ".join(ports), _REFUSAL[proto])]


def transfer_port_ranges(ports):
    """``[6969, "6881-6889"]`` -> port dicts (``{port, count}``); FirewallError for anything else."""
    out = []
    for item in ports or []:
        match = re.match(r"^(\d+)(?:-(\d+))?$", str(item))
        if not match:
            raise FirewallError("firewall_transfer_ports: %r is not a port or a range a-b" % (item,))
        first, last = int(match.group(1)), int(match.group(2) or match.group(1))
        if not 0 < first <= last < 65536:
            raise FirewallError("firewall_transfer_ports: %r is not a port or a range a-b" % (item,))
        out.append({"port": first, "count": last - first + 1})
    return out


def host_rules(plan, host, client_networks=(), admin_networks=(), monitoring_ports=(), transfer_ports=()):
    """``{"ports": [...], "endpoint_ports": [...], "ruleset": text}`` for ``host`` of ``plan``."""
    clients = networks(list(client_networks), "k3_client_networks")
    admins = networks(list(admin_networks), "k3_admin_networks")
    watching = [m for m in (plan.get("monitoring") or {}).get("hosts") or [] if m["host"] == host]
    data = (plan.get("hosts") or {}).get(host)
    if data is None and watching:
        data = {"ip": watching[0]["ip"], "services": []}
    if data is None:
        return {"ports": [], "endpoint_ports": [], "ruleset": ""}
    ports = [p for svc in data["services"] if svc["kind"] != "exporter" for p in svc.get("ports") or []]
    metrics = [p for svc in data["services"] if svc["kind"] == "exporter" for p in svc.get("ports") or []]
    if watching:
        metrics += [{"port": int(port)} for port in monitoring_ports]
    transfers = _port_ranges(transfer_port_ranges(transfer_ports)) if host in (plan.get("hosts") or {}) else []
    endpoint = plan.get("endpoint") or {}
    endpoint_ports = []
    if endpoint.get("host") == host and endpoint.get("port"):
        endpoint_ports = [int(endpoint["port"])]
    watchers = [ipaddress.ip_network(m["ip"]) for m in (plan.get("monitoring") or {}).get("hosts") or []]
    deployment = [ipaddress.ip_network(d["ip"]) for d in plan["hosts"].values()] + watchers + admins
    scrapers = watchers + admins + [ipaddress.ip_network(data["ip"])] if metrics else []
    planned = _port_ranges(ports)
    exported = _port_ranges(metrics)
    lines = [
        "#!/usr/sbin/nft -f",
        "# kimi_k3.serving: the planned ports of %s (profile %s), for the deployment only." % (host, plan["profile"]),
        "# Written by the firewall role from the plan; edit the inventory (k3_client_networks,",
        "# k3_admin_networks, k3_firewall) and re-run instead. Other tables are not touched.",
        "table inet %s" % TABLE,
        "delete table inet %s" % TABLE,
        "table inet %s {" % TABLE,
    ]
    for family, version in (("4", 4), ("6", 6)):
        for name, nets in (("deployment", deployment), ("clients", clients), ("monitoring", scrapers)):
            chosen = [n for n in nets if n.version == version]
            if chosen:
                lines += [
                    "  set %s%s {" % (name, family),
                    "    type %s; flags interval; auto-merge;" % ("ipv4_addr" if version == 4 else "ipv6_addr"),
                    "    elements = { %s }" % _elements(chosen),
                    "  }",
                ]
    lines += [
        "  chain input {",
        "    type filter hook input priority filter - 10; policy accept;",
        '    iif "lo" accept',
    ]
    names = {line.split()[1] for line in lines if line.startswith("  set ")}
    lines += _admitted(exported, [("monitoring", exported)], names)
    endpoint_rule = [("clients", [str(p) for p in endpoint_ports])] if endpoint_ports else []
    lines += _admitted(planned, endpoint_rule + [("deployment", planned)], names)
    # The transfers: TCP and UDP (the tracker answers both), from the deployment's hosts.
    for proto in ("tcp", "udp"):
        lines += _admitted(transfers, [("deployment", transfers)], names, proto)
    lines += ["  }", "}", ""]
    return {
        "ports": planned + exported + transfers,
        "endpoint_ports": endpoint_ports,
        "ruleset": "\n".join(lines),
    }
