# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Host preflight: the planned TCP connections between hosts, and what their test found.

:func:`connections` derives from the plan alone which host connects to which port of which other
host, and why; :func:`probes` turns them into each host's part of the connection test (the ports to
listen on, the connections to make). :func:`connection_problems` and :func:`listen_problems` say
what the test's results mean. Pure functions: no I/O.
"""

from __future__ import annotations

from collections import namedtuple
from urllib.parse import urlsplit

from ansible_collections.kimi_k3.serving.plugins.module_utils.preflight_common import (
    Problem,
    port_range,
    ranges_text,
)

# Ports a decode engine opens to its prefill engines (KV cache transfer and its handshakes).
KV_PORTS = ("kv", "moriio-handshake", "moriio-notify", "nixl-side-channel")
# MetaService ports the prefill engines use (memcache metadata and its config store).
METASERVICE_PORTS = ("meta", "config-store")
# What the connection test's errors usually mean.
ERROR_HINTS = {
    "timed out": "a firewall drops it or there is no route",
    "refused": "a firewall rejects it, or nothing could listen there",
}

# One planned connection, before its destination's address is looked up.
_Pair = namedtuple("_Pair", "src src_service dst dst_service port name why")


def url_port(url):
    """(host, port) of an http(s) URL (default ports filled in)."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return parts.hostname, port


# ---------------------------------------------------------------------------------------- connections
def _services(plan):
    for host, data in (plan.get("hosts") or {}).items():
        for svc in data.get("services") or []:
            yield host, data.get("ip"), svc


def _ports_named(svc, names):
    return [p for p in svc.get("ports") or [] if p.get("name") in names]


def _http_port(eng):
    """An engine's HTTP port: its ``http`` port, else its URL's."""
    ports = _ports_named(eng, ("http",))
    return ports[0]["port"] if ports else url_port(eng["url"])[1]


def _names_engine(argv, eng, ip):
    """Whether a router's or proxy's argv names an engine: its URL, or its address and HTTP port."""
    text = " ".join(str(a) for a in argv)
    if eng["url"] in text:
        return True
    port = str(_http_port(eng))
    words = set(text.replace(",", " ").replace("[", " ").replace("]", " ").replace('"', " ").replace("'", " ").split())
    return ip in words and port in words


def _health_waits(services, index):
    """A service waits for each service in its ``after`` list at that service's health URL."""
    for host, _ip, svc in services:
        for dep in svc.get("after") or []:
            target = index.get(dep) or {}
            url = (target.get("health") or {}).get("url")
            if not url:
                continue
            yield _Pair(
                src=host,
                src_service=svc["name"],
                dst=target.get("host"),
                dst_service=target.get("name"),
                port=url_port(url)[1],
                name="%s health" % target.get("name"),
                why="%s waits for %s to be healthy" % (svc["name"], dep),
            )


def _requests(host, svc, services, discovery):
    """A router or proxy sends requests to the engines its argv names, or to every engine (discovery)."""
    for dst, dip, eng in services:
        if eng.get("kind") != "vllm" or not eng.get("url"):
            continue
        # Static endpoints: the engines its argv names; discovery: every engine (they register).
        if not discovery and not _names_engine(svc.get("argv") or [], eng, dip):
            continue
        yield _Pair(
            src=host,
            src_service=svc["name"],
            dst=dst,
            dst_service=eng["name"],
            port=_http_port(eng),
            name="%s http" % eng["name"],
            why="the %s sends requests to %s/%s" % (svc["kind"], dst, eng["name"]),
        )


def _registrations(host, svc, services, discovery):
    """Every engine registers with a router's ``discovery`` port."""
    for port in discovery:
        for src, _sip, eng in services:
            if eng.get("kind") == "vllm":
                yield _Pair(
                    src=src,
                    src_service=eng["name"],
                    dst=host,
                    dst_service=svc["name"],
                    port=port["port"],
                    name="%s discovery" % svc["name"],
                    why="%s registers with the router at %s" % (eng["name"], host),
                )


def _routing(services):
    for host, _ip, svc in services:
        if svc.get("kind") not in ("router", "proxy"):
            continue
        discovery = _ports_named(svc, ("discovery",))
        yield from _requests(host, svc, services, discovery)
        yield from _registrations(host, svc, services, discovery)


def _dp_joins(services):
    """A data-parallel follower joins its node 0 at the ``dp-rpc`` port."""
    for host, ip, svc in services:
        for port in _ports_named(svc, ("dp-rpc",)):
            for src, _sip, other in services:
                if other.get("kind") != "vllm" or other.get("role") != svc.get("role"):
                    continue
                if (other.get("ranks") or {}).get("dp_address") not in (None, ip):
                    continue
                yield _Pair(
                    src=src,
                    src_service=other["name"],
                    dst=host,
                    dst_service=svc["name"],
                    port=port["port"],
                    name="%s dp-rpc" % svc["name"],
                    why="%s joins its data-parallel node 0 %s/%s" % (other["name"], host, svc["name"]),
                )


def _pulled_ports(svc):
    """(ports, roles that connect to them, what they do) of a prefill engine or a MetaService."""
    if svc.get("kind") == "vllm" and svc.get("role") == "prefill":
        return _ports_named(svc, KV_PORTS), ("decode",), "pulls the KV cache from"
    if svc.get("kind") == "metaservice":
        return _ports_named(svc, METASERVICE_PORTS), ("prefill",), "uses the MetaService"
    return [], (), None


def _pulls(services):
    """A decode engine pulls the KV cache from every prefill engine; a prefill engine uses the MetaService."""
    for host, _ip, svc in services:
        targets, sources, why = _pulled_ports(svc)
        for port in targets:
            for number in port_range(port):
                for src, _sip, other in services:
                    if other.get("kind") != "vllm" or other.get("role") not in sources:
                        continue
                    yield _Pair(
                        src=src,
                        src_service=other["name"],
                        dst=host,
                        dst_service=svc["name"],
                        port=number,
                        name="%s %s" % (svc["name"], port["name"]),
                        why="%s %s %s/%s" % (other["name"], why, host, svc["name"])
                        if svc.get("kind") == "vllm"
                        else "%s %s on %s" % (other["name"], why, host),
                    )


def connections(plan):
    """Every planned TCP connection between two hosts, from the plan alone.

    Returns a list of ``{"src", "src_service", "dst", "dst_service", "ip", "port", "name", "why"}``
    (one entry per source host, destination host and port; a host's connections to itself are left
    out). What talks to what:

    * a service waits for each service in its ``after`` list at that service's health URL;
    * a router or proxy sends requests to the HTTP port of every engine its argv names (static
      endpoints: a URL, or an address and a port), or of every engine (discovery mode);
    * every engine registers with a router's ``discovery`` port (vllm-router discovery mode);
    * a data-parallel follower joins its node 0 at the ``dp-rpc`` port;
    * a decode engine pulls the KV cache from every prefill engine's KV ports;
    * a prefill engine uses the MetaService's ``meta`` and ``config-store`` ports.
    """
    hosts = plan.get("hosts") or {}
    services = list(_services(plan))
    found = {}
    rules = (
        _health_waits(services, plan.get("index") or {}),
        _routing(services),
        _dp_joins(services),
        _pulls(services),
    )
    for rule in rules:
        for pair in rule:
            _add(found, hosts, pair)
    return sorted(found.values(), key=lambda c: (c["src"], c["dst"], c["port"]))


def _add(found, hosts, pair):
    """Note a connection between two hosts; the first reason found for a host, host and port stays."""
    if pair.src == pair.dst or pair.dst not in hosts:
        return
    key = (pair.src, pair.dst, int(pair.port))
    if key in found:
        return
    found[key] = {
        "src": pair.src,
        "src_service": pair.src_service,
        "dst": pair.dst,
        "dst_service": pair.dst_service,
        "ip": hosts[pair.dst].get("ip"),
        "port": int(pair.port),
        "name": pair.name,
        "why": pair.why,
    }


def probes(plan, pairs=None, hosts=None):
    """Per host: the ports to listen on (and who connects), the connections to make, whom each service talks to.

    ``hosts``: the hosts taking part (the play's, e.g. under --limit; default every planned host). A
    connection with an end outside them is not tested (nothing listens or connects there), but still
    counts for whom each service talks to.
    """
    pairs = connections(plan) if pairs is None else pairs
    out = {h: {"listen": [], "connect": [], "talks_to": {}} for h in plan.get("hosts") or {}}
    listen = {}
    taking_part = set(out) if hosts is None else set(hosts)
    for pair in pairs:
        talks = out[pair["src"]]["talks_to"].setdefault(pair["src_service"], [])
        if pair["ip"] not in talks:
            talks.append(pair["ip"])
        if pair["src"] not in taking_part or pair["dst"] not in taking_part:
            continue
        out[pair["src"]]["connect"].append(
            {k: pair[k] for k in ("dst", "dst_service", "ip", "port", "name", "why", "src_service")}
        )
        listen.setdefault(pair["dst"], {}).setdefault(pair["port"], {"port": pair["port"], "name": pair["name"]})
        listen[pair["dst"]][pair["port"]].setdefault("expect", []).append(pair["src"])
    for host, ports in listen.items():
        out[host]["listen"] = [ports[p] for p in sorted(ports)]
    return out


# ---------------------------------------------------------------------------------------- the test's results
def _unique(values):
    out = []
    for value in values:
        if value not in out:
            out.append(value)
    return out


def _answered_by_another(host, r):
    return Problem(
        host,
        "connection",
        "%s:%d (%s) was answered by %s, not by %s" % (r["ip"], r["port"], r["name"], r["answered_by"], r["dst"]),
        "the address %s belongs to another host: give %s its own k3_ip" % (r["ip"], r["dst"]),
    )


def _failed(host, key, rs, timeout):
    """One problem for the failed connections ``rs`` to one destination host with one error (``key``)."""
    dst, ip, error = key
    what = "timed out after %s s" % timeout if error == "timed out" else error
    hint = ERROR_HINTS.get(error, "")
    ports = ranges_text(r["port"] for r in rs)
    return Problem(
        host,
        "connection",
        "TCP to %s %s port %s (%s) %s%s; needed because %s"
        % (
            dst,
            ip,
            ports,
            ", ".join(_unique(r["name"] for r in rs)),
            what,
            " (%s)" % hint if hint else "",
            "; ".join(_unique(r["why"] for r in rs)),
        ),
        "allow TCP from %s to %s port %s (nftables/iptables, security groups, routes)" % (host, ip, ports),
    )


def connection_problems(host, results, timeout):
    """One problem per destination host and error, naming its ports and what needs them."""
    problems = []
    groups = {}
    for r in results or []:
        if not r.get("ok"):
            groups.setdefault((r["dst"], r["ip"], r.get("error")), []).append(r)
        elif r.get("answered_by") and r["answered_by"] != r["dst"]:
            problems.append(_answered_by_another(host, r))
    return problems + [_failed(host, key, rs, timeout) for key, rs in groups.items()]


def listen_problems(host, result):
    """A port the connection test could not listen on (other than one in use: the port check names that)."""
    return [
        Problem(
            host,
            "port %s" % port,
            "the connection test could not listen on it: %s" % error,
            "let root bind TCP port %s on %s (or skip the test: preflight_check_connections: false)" % (port, host),
        )
        for port, error in sorted(((result or {}).get("errors") or {}).items())
    ]
