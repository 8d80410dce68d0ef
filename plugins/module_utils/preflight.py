# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Host preflight: what the planner cannot see, decided in plain Python (no Ansible imports).

The planner checks the inventory; this checks the hosts against the plan before anything changes:

* the planned address (``hosts[h].ip``) is an address of the host, owned by the interface the
  socket-interface variables (``k3_nic``, ``*_SOCKET_IFNAME``) name;
* every planned port is free, or held by the service's own unit;
* every planned connection between hosts goes through (:func:`connections` derives them from the
  plan; :func:`listen` and :func:`connect` test them with short-lived listeners);
* no proxy variable would send cluster traffic through a proxy;
* the clock agrees with the controller's;
* there is room for the checkpoint, and ``/dev/shm`` is as large as the services need.

Every check returns :class:`Problem` objects, each naming the host, what is wrong and the fix.
Code here runs on the hosts too: Python 3.8+, standard library only.
"""

from __future__ import annotations

import errno
import ipaddress
import json
import os
import select
import shlex
import socket
import time
from urllib.parse import urlsplit

# Proxy variables that capture HTTP(S) clients (checked in any case); ftp_proxy carries no cluster traffic.
PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy")
# Planned environment variables that name the interface of the host's address.
NIC_SUFFIX = "_SOCKET_IFNAME"
# Ports a decode engine opens to its prefill engines (KV cache transfer and its handshakes).
KV_PORTS = ("kv", "moriio-handshake", "moriio-notify", "nixl-side-channel")
# MetaService ports the prefill engines use (memcache metadata and its config store).
METASERVICE_PORTS = ("meta", "config-store")
# What the connection test says first, and what its listener answers.
HELLO = "K3PREFLIGHT"
# The listeners' process name: a port check that meets one (of a run that just ended) does not count it.
LISTENER_NAME = "k3-preflight"
GIB = 1024**3


class Problem:
    """One thing on one host that would break the deployment."""

    def __init__(self, host, what, message, fix):
        self.host = host
        self.what = what
        self.message = message
        self.fix = fix

    def __str__(self):
        return "host %s: %s: %s. Fix: %s" % (self.host, self.what, self.message, self.fix)

    def __repr__(self):
        return "Problem(%r)" % str(self)


def messages(problems):
    return [str(p) for p in problems]


# ---------------------------------------------------------------------------------------- helpers
def port_range(port):
    """Every port number of a planned port entry (``count`` consecutive ports)."""
    return list(range(int(port["port"]), int(port["port"]) + int(port.get("count", 1) or 1)))


def ranges_text(ports):
    """8000, 36000-36015: consecutive numbers folded."""
    ports = sorted(set(ports))
    out = []
    start = prev = None
    for p in ports:
        if prev is not None and p == prev + 1:
            prev = p
            continue
        if start is not None:
            out.append(str(start) if start == prev else "%d-%d" % (start, prev))
        start = prev = p
    if start is not None:
        out.append(str(start) if start == prev else "%d-%d" % (start, prev))
    return ", ".join(out)


def human_bytes(value):
    value = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return ("%d %s" % (value, unit)) if unit == "B" else ("%.1f %s" % (value, unit))
        value /= 1024
    return "%.1f TiB" % value


def parse_size(text):
    """Docker's size syntax (``--shm-size 1g``): a number with an optional b, k, m or g (powers of 1024)."""
    if text is None or text == "":
        return None
    if isinstance(text, (int, float)):
        return int(text)
    s = str(text).strip().lower()
    units = {"b": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
    if s.endswith("ib"):
        s = s[:-2]
    elif s.endswith("b") and len(s) > 1 and s[-2] in units:
        s = s[:-1]
    mult = 1
    if s and s[-1] in units:
        mult = units[s[-1]]
        s = s[:-1]
    try:
        return int(float(s) * mult)
    except ValueError:
        raise ValueError("%r is not a size (a number with an optional b, k, m or g)" % (text,)) from None


def mask_url(value):
    """A proxy URL without its credentials."""
    try:
        parts = urlsplit(value if "://" in value else "http://" + value)
    except ValueError:
        return value
    if parts.username or parts.password:
        host = parts.hostname or ""
        if parts.port:
            host += ":%d" % parts.port
        return value.replace(parts.netloc, "***@" + host, 1)
    return value


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


def _names_engine(argv, eng, ip):
    """Whether a router's or proxy's argv names an engine: its URL, or its address and HTTP port."""
    text = " ".join(str(a) for a in argv)
    if eng["url"] in text:
        return True
    ports = _ports_named(eng, ("http",))
    port = str(ports[0]["port"] if ports else url_port(eng["url"])[1])
    words = set(text.replace(",", " ").replace("[", " ").replace("]", " ").replace('"', " ").replace("'", " ").split())
    return ip in words and port in words


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
    index = plan.get("index") or {}
    found = {}

    def add(src, src_service, dst, dst_service, port, name, why):
        if src == dst or dst not in hosts:
            return
        key = (src, dst, int(port))
        if key in found:
            return
        found[key] = {
            "src": src,
            "src_service": src_service,
            "dst": dst,
            "dst_service": dst_service,
            "ip": hosts[dst].get("ip"),
            "port": int(port),
            "name": name,
            "why": why,
        }

    services = list(_services(plan))
    for host, _ip, svc in services:
        for dep in svc.get("after") or []:
            target = index.get(dep) or {}
            url = (target.get("health") or {}).get("url")
            if not url:
                continue
            _h, port = url_port(url)
            add(
                host,
                svc["name"],
                target.get("host"),
                target.get("name"),
                port,
                "%s health" % target.get("name"),
                "%s waits for %s to be healthy" % (svc["name"], dep),
            )
    for host, _ip, svc in services:
        if svc.get("kind") not in ("router", "proxy"):
            continue
        discovery = _ports_named(svc, ("discovery",))
        for dst, dip, eng in services:
            if eng.get("kind") != "vllm" or not eng.get("url"):
                continue
            # Static endpoints: the engines its argv names; discovery: every engine (they register).
            if not discovery and not _names_engine(svc.get("argv") or [], eng, dip):
                continue
            ports = _ports_named(eng, ("http",))
            port = ports[0]["port"] if ports else url_port(eng["url"])[1]
            add(
                host,
                svc["name"],
                dst,
                eng["name"],
                port,
                "%s http" % eng["name"],
                "the %s sends requests to %s/%s" % (svc["kind"], dst, eng["name"]),
            )
        for port in discovery:
            for src, _sip, eng in services:
                if eng.get("kind") == "vllm":
                    add(
                        src,
                        eng["name"],
                        host,
                        svc["name"],
                        port["port"],
                        "%s discovery" % svc["name"],
                        "%s registers with the router at %s" % (eng["name"], host),
                    )
    for host, ip, svc in services:
        for port in _ports_named(svc, ("dp-rpc",)):
            for src, _sip, other in services:
                if other.get("kind") != "vllm" or other.get("role") != svc.get("role"):
                    continue
                address = (other.get("ranks") or {}).get("dp_address")
                if address not in (None, ip):
                    continue
                add(
                    src,
                    other["name"],
                    host,
                    svc["name"],
                    port["port"],
                    "%s dp-rpc" % svc["name"],
                    "%s joins its data-parallel node 0 %s/%s" % (other["name"], host, svc["name"]),
                )
    for host, _ip, svc in services:
        if svc.get("kind") == "vllm" and svc.get("role") == "prefill":
            targets, sources, why = _ports_named(svc, KV_PORTS), ("decode",), "pulls the KV cache from"
        elif svc.get("kind") == "metaservice":
            targets, sources, why = _ports_named(svc, METASERVICE_PORTS), ("prefill",), "uses the MetaService"
        else:
            continue
        for port in targets:
            for number in port_range(port):
                for src, _sip, other in services:
                    if other.get("kind") == "vllm" and other.get("role") in sources:
                        add(
                            src,
                            other["name"],
                            host,
                            svc["name"],
                            number,
                            "%s %s" % (svc["name"], port["name"]),
                            "%s %s %s/%s" % (other["name"], why, host, svc["name"])
                            if svc.get("kind") == "vllm"
                            else "%s %s on %s" % (other["name"], why, host),
                        )
    return sorted(found.values(), key=lambda c: (c["src"], c["dst"], c["port"]))


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


# ---------------------------------------------------------------------------------------- address and NIC
def interface_names(value):
    """Interface names of a socket-interface variable (eth0, =eth0, eth0,eth1); None for exclusions (^lo)."""
    value = (value or "").strip()
    if not value or value.startswith("^"):
        return None
    if value.startswith("="):
        value = value[1:]
    return [n.strip() for n in value.split(",") if n.strip()]


def nic_settings(services, inventory_nic=None):
    """(value -> [variables]) of the host's k3_nic and its planned *_SOCKET_IFNAME variables."""
    out = {}
    if inventory_nic:
        out.setdefault(str(inventory_nic), []).append("k3_nic")
    for svc in services or []:
        for key, value in (svc.get("env") or {}).items():
            if key.endswith(NIC_SUFFIX) and value:
                label = "%s (%s)" % (key, svc["name"])
                out.setdefault(str(value), []).append(label)
    return out


def parse_ip_json(text):
    """``ip -j addr show`` -> [{"name", "state", "addresses"}]."""
    out = []
    for link in json.loads(text or "[]"):
        out.append(
            {
                "name": link.get("ifname"),
                "state": link.get("operstate"),
                "addresses": [a.get("local") for a in link.get("addr_info") or [] if a.get("local")],
            }
        )
    return out


def _same_address(a, b):
    try:
        return ipaddress.ip_address(a) == ipaddress.ip_address(b)
    except ValueError:
        return a == b


def check_address(host, ip, interfaces, services, inventory_nic=None, resolved=None):
    """The plan's address is one of the host's, on the interface k3_nic / *_SOCKET_IFNAME name."""
    problems = []
    wanted = [ip] + [a for a in resolved or [] if a != ip]
    owner = None
    for iface in interfaces:
        for addr in iface.get("addresses") or []:
            if any(_same_address(addr, w) for w in wanted):
                owner = owner or iface
    listing = "; ".join(
        "%s %s" % (i["name"], ", ".join(i.get("addresses") or []) or "(no address)") for i in interfaces
    )
    if owner is None:
        problems.append(
            Problem(
                host,
                "k3_ip",
                "the planned address %s%s is not an address of this host (it has: %s)"
                % (ip, " (%s)" % ", ".join(resolved) if resolved and resolved != [ip] else "", listing),
                "set k3_ip (or ansible_host) of %s to the address the other nodes reach it at" % host,
            )
        )
        return problems
    if (owner.get("state") or "").upper() == "DOWN":
        problems.append(
            Problem(
                host,
                "k3_nic",
                "%s owns the planned address %s but is down" % (owner["name"], ip),
                "bring %s up (ip link set %s up), or plan another address" % (owner["name"], owner["name"]),
            )
        )
    names = {i["name"] for i in interfaces}
    for value, variables in nic_settings(services, inventory_nic).items():
        listed = interface_names(value)
        if listed is None or owner["name"] in listed:
            continue
        missing = [n for n in listed if n not in names]
        why = (
            "there is no interface %s on this host (it has %s)" % (", ".join(missing), ", ".join(sorted(names)))
            if missing
            else "%s does not own the planned address %s" % (value, ip)
        )
        problems.append(
            Problem(
                host,
                "k3_nic",
                "%s is %s, but %s is on %s: %s" % (", ".join(variables), value, ip, owner["name"], why),
                "set k3_nic to %s (the interface must own the host's address, as NIC_NAME must own LOCAL_IP)%s"
                % (
                    owner["name"],
                    "" if variables == ["k3_nic"] or "k3_nic" in variables else ", or correct the variable in k3_env",
                ),
            )
        )
    return problems


# ---------------------------------------------------------------------------------------- ports
def parse_proc_net_tcp(text):
    """Listening sockets of /proc/net/tcp or tcp6: [{"port", "address", "inode"}]."""
    out = []
    for line in (text or "").splitlines()[1:]:
        fields = line.split()
        if len(fields) < 10 or fields[3] != "0A":
            continue
        addr, _unused, port = fields[1].partition(":")
        out.append({"port": int(port, 16), "address": _hex_address(addr), "inode": fields[9]})
    return out


def _hex_address(addr):
    try:
        raw = bytes.fromhex(addr)
    except ValueError:
        return addr
    if len(raw) == 4:
        return socket.inet_ntop(socket.AF_INET, raw[::-1])
    if len(raw) == 16:
        words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
        return socket.inet_ntop(socket.AF_INET6, words)
    return addr


def unit_of_cgroup(text):
    """The systemd unit (``k3-prefill``) or the docker container id of a /proc/PID/cgroup."""
    unit = container = None
    for line in (text or "").splitlines():
        path = line.split(":", 2)[-1]
        for part in path.split("/"):
            if part.endswith(".service"):
                unit = part[: -len(".service")]
            elif part.startswith("docker-") and part.endswith(".scope"):
                container = part[len("docker-") : -len(".scope")]
            elif len(part) == 64 and all(c in "0123456789abcdef" for c in part) and "docker" in path:
                container = part
    return unit, container


def check_ports(host, services, listeners):
    """Every planned port is free, or held by the service's own unit (``k3-<service>``)."""
    problems = []
    by_port = {}
    for sock in listeners:
        by_port.setdefault(int(sock["port"]), []).append(sock)
    for svc in services or []:
        stray = {}
        for port in svc.get("ports") or []:
            for number in port_range(port):
                for sock in by_port.get(number, []):
                    # Its own unit, or the listener of a preflight that just ran (it exits on its own).
                    if sock.get("unit") == svc.get("unit") or sock.get("comm") == LISTENER_NAME:
                        continue
                    key = (sock.get("pid"), sock.get("command"), sock.get("unit"))
                    stray.setdefault(key, []).append((number, port["name"]))
        for (pid, command, unit), held in stray.items():
            who = (
                "pid %s (%s%s)" % (pid, command or "?", ", unit %s" % unit if unit else "")
                if pid
                else "a process this host does not show (no pid found for the socket)"
            )
            names = sorted({n for _p, n in held})
            problems.append(
                Problem(
                    host,
                    "port %s" % ranges_text(p for p, _n in held),
                    "planned for %s (%s) and held by %s, not by %s"
                    % (svc["name"], ", ".join(names), who, svc.get("unit")),
                    "stop that process or free the port%s, or give %s other ports (the profile's k3_*_port "
                    "parameters)" % (" (kill %s)" % pid if pid else "", svc["name"]),
                )
            )
    return problems


# ---------------------------------------------------------------------------------------- proxies
def parse_env_lines(text):
    """KEY=VALUE lines (/etc/environment, ``systemctl show-environment``): quotes removed, comments skipped."""
    out = {}
    for line in (text or "").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export ") :].strip()
        key, sep, value = line.partition("=")
        if not sep or not key.replace("_", "").isalnum():
            continue
        value = value.strip()
        if value.startswith("$'") and value.endswith("'"):
            value = value[2:-1].encode("utf-8").decode("unicode_escape")
        elif len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        out[key] = value
    return out


def parse_unit_environment(text):
    """``Environment=`` assignments of a systemd unit or drop-in ([Service] section)."""
    out = {}
    section = None
    for line in (text or "").splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line
            continue
        if section != "[Service]" or not line.startswith("Environment="):
            continue
        value = line[len("Environment=") :]
        if not value:
            out.clear()  # an empty assignment resets the list
            continue
        try:
            words = shlex.split(value)
        except ValueError:
            words = value.split()
        for word in words:
            key, sep, val = word.partition("=")
            if sep:
                out[key] = val
    return out


def docker_client_proxies(config):
    """Proxy variables the docker client injects into containers (``proxies.default`` of config.json)."""
    default = ((config or {}).get("proxies") or {}).get("default") or {}
    out = {}
    for key, names in (
        ("httpProxy", ("HTTP_PROXY", "http_proxy")),
        ("httpsProxy", ("HTTPS_PROXY", "https_proxy")),
        ("allProxy", ("ALL_PROXY", "all_proxy")),
        ("noProxy", ("NO_PROXY", "no_proxy")),
    ):
        if default.get(key):
            for name in names:
                out[name] = default[key]
    return out


def docker_daemon_proxies(config):
    """``proxies`` of /etc/docker/daemon.json as the variables dockerd would get."""
    proxies = (config or {}).get("proxies") or {}
    out = {}
    for key, name in (("http-proxy", "HTTP_PROXY"), ("https-proxy", "HTTPS_PROXY"), ("no-proxy", "NO_PROXY")):
        if proxies.get(key):
            out[name] = proxies[key]
    return out


def no_proxy_covers(no_proxy, address):
    """Whether a no_proxy list (``*``, addresses, CIDR blocks, domain suffixes) exempts ``address``."""
    for entry in (no_proxy or "").replace(" ", ",").split(","):
        entry = entry.strip()
        if not entry:
            continue
        if entry == "*":
            return True
        try:
            addr = ipaddress.ip_address(address)
        except ValueError:
            addr = None
        if addr is not None:
            try:
                if addr in ipaddress.ip_network(entry.strip("[]"), strict=False):
                    return True
            except ValueError:
                pass
            continue
        name = entry.lstrip("*").lstrip(".").lower()
        if address.lower() == name or address.lower().endswith("." + name):
            return True
    return False


def _proxy_name(key):
    return key.lower() in PROXY_VARIABLES


def check_proxies(host, ip, services, talks_to, host_sources, docker_sources=None):
    """No proxy variable a service would see sends its cluster traffic through a proxy.

    ``host_sources`` and ``docker_sources`` are ``[(label, {var: value})]`` in the order they apply
    (later wins): what a host-runtime unit inherits, and what a docker-runtime container gets; the
    planned environment applies last, then the service's ``shell.unset``.
    """
    problems = []
    for svc in services or []:
        layers = list(docker_sources or []) if svc.get("runtime") == "docker" else list(host_sources or [])
        layers.append(("the planned environment (k3_env or the profile)", svc.get("env") or {}))
        unset = set((svc.get("shell") or {}).get("unset") or [])
        effective = {}
        for label, env in layers:
            for key, value in (env or {}).items():
                effective[key] = (str(value), label)
        for key in unset:
            effective.pop(key, None)
        if "no_proxy" in effective:
            no_proxy = effective["no_proxy"][0]
        else:
            no_proxy = effective.get("NO_PROXY", ("", None))[0]
        addresses = list(talks_to.get(svc["name"]) or [])
        if ip and ip not in addresses:
            addresses.append(ip)
        for key in sorted(effective):
            value, label = effective[key]
            if not _proxy_name(key) or not value:
                continue
            uncovered = [a for a in addresses if not no_proxy_covers(no_proxy, a)]
            if not uncovered:
                continue
            planned = label.startswith("the planned environment")
            problems.append(
                Problem(
                    host,
                    "k3_env.%s" % key if planned else key,
                    "%s=%s (set in %s) would send %s's traffic to %s through the proxy"
                    % (key, mask_url(value), label, svc["name"], ", ".join(uncovered)),
                    (
                        "remove %s from k3_env (the recipes unset the proxy variables), or add %s to no_proxy there"
                        if planned
                        else "remove %s from " + label + ", or add %s to its no_proxy/NO_PROXY"
                    )
                    % (key, ",".join(uncovered)),
                )
            )
    return problems


# ---------------------------------------------------------------------------------------- clock
def check_clock(host, host_time, controller_time, max_skew):
    """The host's clock against the controller's, read at the same moment (seconds)."""
    skew = float(host_time) - float(controller_time)
    if abs(skew) <= float(max_skew):
        return []
    return [
        Problem(
            host,
            "clock",
            "the clock is %.1f s %s the controller's (at most %s s allowed)"
            % (abs(skew), "ahead of" if skew > 0 else "behind", max_skew),
            "synchronise the clocks of every node and the controller (chrony or systemd-timesyncd against "
            "the same NTP servers), or raise preflight_clock_skew_max",
        )
    ]


# ---------------------------------------------------------------------------------------- disk and /dev/shm
def check_space(host, folders, min_free):
    """Room for the checkpoint folders.

    ``folders``: ``[{"path", "exists", "source", "source_exists", "need", "fs", "free"}]``: ``source``
    when the folder is staged from there (``need``: bytes still to copy), ``fs`` and ``free`` of the
    filesystem the folder is (or will be) on.
    """
    problems = []
    by_fs = {}
    for item in folders or []:
        path = item["path"]
        if item.get("source"):
            if not item.get("source_exists"):
                problems.append(
                    Problem(
                        host,
                        "k3_model_weights_sources",
                        "%s is to be staged from %s, which does not exist on this host" % (path, item["source"]),
                        "mount the source (e.g. the shared storage) on %s, or correct k3_model_weights_sources" % host,
                    )
                )
                continue
        elif not item.get("exists"):
            problems.append(
                Problem(
                    host,
                    "k3_model_path" if not item.get("draft") else "k3_draft_model_path",
                    "the checkpoint folder %s does not exist" % path,
                    "put the checkpoint there (or mount the storage that holds it), stage it with "
                    "k3_model_weights_sources, or set the path the host has",
                )
            )
            continue
        entry = by_fs.setdefault(item.get("fs"), {"free": item.get("free"), "need": 0, "paths": []})
        entry["need"] += int(item.get("need") or 0)
        entry["paths"].append(path)
    for entry in by_fs.values():
        if entry["free"] is None:
            continue
        left = int(entry["free"]) - entry["need"]
        if left >= int(min_free):
            continue
        need = " and staging needs %s more" % human_bytes(entry["need"]) if entry["need"] else ""
        problems.append(
            Problem(
                host,
                "disk",
                "the filesystem of %s has %s free%s; at least %s must stay free (preflight_min_free_bytes)"
                % (", ".join(entry["paths"]), human_bytes(entry["free"]), need, human_bytes(min_free)),
                "free %s there, put the checkpoint on a larger filesystem, or lower preflight_min_free_bytes"
                % human_bytes(int(min_free) - left),
            )
        )
    return problems


def shm_needs(services, host_runtime_bytes):
    """(bytes, why) of /dev/shm each service needs on the host.

    Docker with ``--ipc host`` uses the host's /dev/shm (the planned ``--shm-size`` is then what the
    recipe expects of it); docker without it gets a /dev/shm of its own; vLLM on the host runtime
    uses the host's, sized by ``preflight_shm_bytes``.
    """
    out = []
    for svc in services or []:
        if svc.get("kind") != "vllm":
            continue
        container = svc.get("container") or {}
        if svc.get("runtime") == "docker":
            if container.get("ipc") == "host" and container.get("shm_size"):
                out.append(
                    (
                        parse_size(container["shm_size"]),
                        "%s (--ipc host, planned --shm-size %s)" % (svc["name"], container["shm_size"]),
                    )
                )
        elif host_runtime_bytes:
            out.append((int(host_runtime_bytes), "%s (host runtime, preflight_shm_bytes)" % svc["name"]))
    return out


def check_shm(host, services, shm_total, host_runtime_bytes):
    needs = shm_needs(services, host_runtime_bytes)
    if not needs:
        return []
    need, why = max(needs, key=lambda n: n[0])
    if shm_total is None:
        return [
            Problem(
                host,
                "/dev/shm",
                "there is no /dev/shm; %s needs %s" % (why, human_bytes(need)),
                "mount a tmpfs on /dev/shm of at least %s" % human_bytes(need),
            )
        ]
    if int(shm_total) >= need:
        return []
    return [
        Problem(
            host,
            "/dev/shm",
            "/dev/shm is %s; %s needs at least %s" % (human_bytes(shm_total), why, human_bytes(need)),
            "enlarge it (mount -o remount,size=%s /dev/shm, and in /etc/fstab), or lower preflight_shm_bytes "
            "/ the profile's shm_size" % _size_arg(need),
        )
    ]


def _size_arg(value):
    if value % GIB == 0:
        return "%dG" % (value // GIB)
    return "%dM" % -(-value // (1024**2))


# ---------------------------------------------------------------------------------------- connection test
def bind_ports(ports):
    """Listening sockets for ``ports`` (``[{"port", "name", "expect"}]``): (sockets, held, errors).

    A port already in use is not listened on (``held``): its holder answers the connections (the
    collection's own running service, or a process the port check names).
    """
    socks = {}
    held, errors = [], {}
    for entry in ports:
        port = int(entry["port"])
        try:
            sock = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        except OSError:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("", port))
            sock.listen(128)
            sock.setblocking(False)
            socks[sock] = entry
        except OSError as exc:
            sock.close()
            if exc.errno == errno.EADDRINUSE:
                held.append(port)
            else:
                errors[str(port)] = str(exc)
    return socks, sorted(held), errors


def serve(socks, host, timeout, clock=time.monotonic, token=None):
    """Greet every connection and note who said hello, until every expected host has, or ``timeout`` s.

    ``STOP <token>`` instead of a host name ends it at once (:func:`stop_listener`).
    """
    expected = {(int(e["port"]), h) for e in socks.values() for h in e.get("expect") or []}
    seen = set()
    stopped = False
    deadline = clock() + float(timeout)
    try:
        while socks and not expected <= seen and not stopped:
            left = deadline - clock()
            if left <= 0:
                break
            ready, _w, _x = select.select(list(socks), [], [], min(left, 0.5))
            for lsock in ready:
                try:
                    conn, _peer = lsock.accept()
                except OSError:
                    continue
                port = int(socks[lsock]["port"])
                try:
                    # The listener speaks first: a connector that hears no banner knows a real service answered.
                    conn.settimeout(2)
                    conn.sendall(("%s %s %d\n" % (HELLO, host, port)).encode())
                    data = b""
                    while b"\n" not in data and len(data) < 512:
                        chunk = conn.recv(512)
                        if not chunk:
                            break
                        data += chunk
                    words = data.decode("utf-8", "replace").split()
                    if token and words[:3] == [HELLO, "STOP", token]:
                        stopped = True
                    elif len(words) >= 2 and words[0] == HELLO:
                        seen.add((port, words[1]))
                except OSError:
                    pass
                finally:
                    conn.close()
    finally:
        for sock in socks:
            sock.close()
    return {
        "seen": sorted("%s:%d" % (h, p) for p, h in seen),
        "missing": sorted("%s:%d" % (h, p) for p, h in expected - seen),
    }


def listen(ports, host, timeout, clock=time.monotonic):
    """Bind, then serve in this process: ``{"listened", "held", "errors", "seen", "missing"}``."""
    socks, held, errors = bind_ports(ports)
    listened = sorted(int(e["port"]) for e in socks.values())
    result = serve(socks, host, timeout, clock)
    result.update({"listened": listened, "held": held, "errors": errors})
    return result


def stop_listener(port, token, timeout=3):
    """End a listener of :func:`spawn_listener` that still waits for a connection that did not come."""
    try:
        with socket.create_connection(("localhost", int(port)), timeout=timeout) as sock:
            sock.settimeout(timeout)
            banner = sock.recv(512).decode("utf-8", "replace").split()
            if banner[:1] != [HELLO]:
                return False
            sock.sendall(("%s STOP %s\n" % (HELLO, token)).encode())
            return True
    except OSError:
        return False


def spawn_listener(ports, host, timeout):
    """Bind now, then serve in a detached process for at most ``timeout`` s; returns what was bound.

    The caller returns at once with every port already listening, so the other hosts can connect
    as soon as their next task starts. The detached process keeps no descriptor of the caller's
    (its output channel stays free) and leaves nothing behind when it exits.
    """
    import resource
    import secrets

    token = secrets.token_hex(8)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        status = 0
        try:
            os.close(read_end)
            os.setsid()
            if os.fork():
                os._exit(0)
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
            limit = 65536 if limit in (resource.RLIM_INFINITY, -1) or limit > 65536 else limit
            os.closerange(3, write_end)
            os.closerange(write_end + 1, limit)
            _name_process(LISTENER_NAME)
            socks, held, errors = bind_ports(ports)
            bound = {"listened": sorted(int(e["port"]) for e in socks.values()), "held": held, "errors": errors}
            bound["token"] = token if socks else None
            os.write(write_end, json.dumps(bound).encode())
            os.close(write_end)
            serve(socks, host, timeout, token=token)
        except BaseException:  # noqa: BLE001 - a detached process must never return into the caller's code
            status = 1
        finally:
            os._exit(status)
    os.close(write_end)
    data = b""
    while True:
        chunk = os.read(read_end, 65536)
        if not chunk:
            break
        data += chunk
    os.close(read_end)
    os.waitpid(pid, 0)
    if not data:
        return {"listened": [], "held": [], "errors": {"*": "the listener process did not start"}, "token": None}
    return json.loads(data.decode())


def _name_process(name):
    """Set this process's name (/proc/PID/comm), so a port check can recognise it."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(15, name.encode()[:15], 0, 0, 0)  # PR_SET_NAME
    except (OSError, AttributeError, TypeError):
        pass


def _connect_one(target, host, deadline, clock, sleep):
    """One connection: retried while refused (the listener may still be starting) until ``deadline``."""
    last = None
    while True:
        left = deadline - clock()
        if left <= 0:
            return {"ok": False, "error": last or "timed out"}
        try:
            sock = socket.create_connection((target["ip"], int(target["port"])), timeout=left)
        except TimeoutError:  # socket.timeout before 3.10 is an OSError whose text is 'timed out'
            return {"ok": False, "error": "timed out"}
        except ConnectionRefusedError:
            last = "refused"
            sleep(0.2)
            continue
        except OSError as exc:
            if exc.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH):
                last = "unreachable (%s)" % exc.strerror
                sleep(0.2)
                continue
            return {"ok": False, "error": str(exc)}
        data = b""
        try:
            # Our listener greets at once; a running service (HTTP, ZMQ ...) is left alone after a short wait.
            sock.settimeout(max(0.2, min(0.5, deadline - clock())))
            while b"\n" not in data and len(data) < 512:
                chunk = sock.recv(512)
                if not chunk:
                    break
                data += chunk
            words = data.decode("utf-8", "replace").split()
            if words[:1] == [HELLO]:
                sock.sendall(("%s %s\n" % (HELLO, host)).encode())
        except OSError:
            words = data.decode("utf-8", "replace").split()
        finally:
            sock.close()
        if words[:1] == [HELLO]:
            return {"ok": True, "answered_by": words[1] if len(words) > 1 else None}
        # Not the listener: the port's holder (the running service) accepted the connection.
        return {"ok": True, "answered_by": None}


def connect(targets, host, timeout, clock=time.monotonic, sleep=time.sleep):
    """Connect to every target at once (threads); each result is the target plus ok/error/answered_by."""
    import threading

    deadline = clock() + float(timeout)
    results = [None] * len(targets)

    def run(i):
        results[i] = dict(targets[i], **_connect_one(targets[i], host, deadline, clock, sleep))

    for start in range(0, len(targets), 512):
        threads = [
            threading.Thread(target=run, args=(i,), daemon=True) for i in range(start, min(start + 512, len(targets)))
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    return results


def connection_problems(host, results, timeout):
    """One problem per destination host and error, naming its ports and what needs them."""
    problems = []
    groups = {}
    for r in results or []:
        if r.get("ok"):
            if r.get("answered_by") and r["answered_by"] != r["dst"]:
                problems.append(
                    Problem(
                        host,
                        "connection",
                        "%s:%d (%s) was answered by %s, not by %s"
                        % (r["ip"], r["port"], r["name"], r["answered_by"], r["dst"]),
                        "the address %s belongs to another host: give %s its own k3_ip" % (r["ip"], r["dst"]),
                    )
                )
            continue
        groups.setdefault((r["dst"], r["ip"], r.get("error")), []).append(r)
    for (dst, ip, error), rs in groups.items():
        names = []
        for r in rs:
            if r["name"] not in names:
                names.append(r["name"])
        whys = []
        for r in rs:
            if r["why"] not in whys:
                whys.append(r["why"])
        what = "timed out after %s s" % timeout if error == "timed out" else error
        hint = {
            "timed out": "a firewall drops it or there is no route",
            "refused": "a firewall rejects it, or nothing could listen there",
        }.get(error, "")
        problems.append(
            Problem(
                host,
                "connection",
                "TCP to %s %s port %s (%s) %s%s; needed because %s"
                % (
                    dst,
                    ip,
                    ranges_text(r["port"] for r in rs),
                    ", ".join(names),
                    what,
                    " (%s)" % hint if hint else "",
                    "; ".join(whys),
                ),
                "allow TCP from %s to %s port %s (nftables/iptables, security groups, routes)"
                % (host, ip, ranges_text(r["port"] for r in rs)),
            )
        )
    return problems


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
