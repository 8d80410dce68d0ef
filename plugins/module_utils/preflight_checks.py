# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Host preflight: what a host's gathered facts mean for its part of the plan (pure functions, no I/O).

Each check takes what ``preflight_gather`` read (or the recorded inputs of the unit tests) and
returns one :class:`Problem` per finding, naming the host, what is wrong and the fix: the planned
address and its interface, the planned ports, the clock, the room for the checkpoint, and
``/dev/shm``. The proxy check is in ``preflight_proxies``, the connection test's in
``preflight_connections``.
"""

from __future__ import annotations

import ipaddress

from ansible_collections.kimi_k3.serving.plugins.module_utils.preflight_common import (
    LISTENER_NAME,
    Problem,
    port_range,
    ranges_text,
)

# Planned environment variables that name the interface of the host's address.
NIC_SUFFIX = "_SOCKET_IFNAME"
GIB = 1024**3


# ---------------------------------------------------------------------------------------- sizes
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


def _same_address(a, b):
    try:
        return ipaddress.ip_address(a) == ipaddress.ip_address(b)
    except ValueError:
        return a == b


def _owner(interfaces, wanted):
    """The first interface that owns one of the ``wanted`` addresses (None if none does)."""
    for iface in interfaces:
        for addr in iface.get("addresses") or []:
            if any(_same_address(addr, w) for w in wanted):
                return iface
    return None


def _not_an_address(host, ip, interfaces, resolved):
    listing = "; ".join(
        "%s %s" % (i["name"], ", ".join(i.get("addresses") or []) or "(no address)") for i in interfaces
    )
    return Problem(
        host,
        "k3_ip",
        "the planned address %s%s is not an address of this host (it has: %s)"
        % (ip, " (%s)" % ", ".join(resolved) if resolved and resolved != [ip] else "", listing),
        "set k3_ip (or ansible_host) of %s to the address the other nodes reach it at" % host,
    )


def _nic_problems(host, ip, owner, interfaces, settings):
    """A socket-interface setting (``settings``: value -> [variables]) that does not name ``owner``."""
    problems = []
    names = {i["name"] for i in interfaces}
    for value, variables in settings.items():
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


# The unit tests call it with its first five arguments positionally; ``resolved`` is the module's.
def check_address(host, ip, interfaces, services, inventory_nic=None, *, resolved=None):  # noqa: PLR0913
    """The plan's address is one of the host's, on the interface k3_nic / *_SOCKET_IFNAME name.

    ``resolved``: the addresses the planned name resolves to, when it is a name.
    """
    owner = _owner(interfaces, [ip] + [a for a in resolved or [] if a != ip])
    if owner is None:
        return [_not_an_address(host, ip, interfaces, resolved)]
    problems = []
    if (owner.get("state") or "").upper() == "DOWN":
        problems.append(
            Problem(
                host,
                "k3_nic",
                "%s owns the planned address %s but is down" % (owner["name"], ip),
                "bring %s up (ip link set %s up), or plan another address" % (owner["name"], owner["name"]),
            )
        )
    return problems + _nic_problems(host, ip, owner, interfaces, nic_settings(services, inventory_nic))


# ---------------------------------------------------------------------------------------- ports
def _strays(svc, by_port):
    """(pid, command, unit) -> [(port, port name)] of the planned ports another process holds."""
    stray = {}
    for port in svc.get("ports") or []:
        for number in port_range(port):
            for sock in by_port.get(number, []):
                # Its own unit, or the listener of a preflight that just ran (it exits on its own).
                if sock.get("unit") == svc.get("unit") or sock.get("comm") == LISTENER_NAME:
                    continue
                key = (sock.get("pid"), sock.get("command"), sock.get("unit"))
                stray.setdefault(key, []).append((number, port["name"]))
    return stray


def _held(host, svc, holder, held):
    """The planned ports ``held`` (``[(port, port name)]``) of a service, held by another process."""
    pid, command, unit = holder
    who = (
        "pid %s (%s%s)" % (pid, command or "?", ", unit %s" % unit if unit else "")
        if pid
        else "a process this host does not show (no pid found for the socket)"
    )
    names = sorted({n for _p, n in held})
    return Problem(
        host,
        "port %s" % ranges_text(p for p, _n in held),
        "planned for %s (%s) and held by %s, not by %s" % (svc["name"], ", ".join(names), who, svc.get("unit")),
        "stop that process or free the port%s, or give %s other ports (the profile's k3_*_port "
        "parameters)" % (" (kill %s)" % pid if pid else "", svc["name"]),
    )


def check_ports(host, services, listeners):
    """Every planned port is free, or held by the service's own unit (``k3-<service>``)."""
    by_port = {}
    for sock in listeners:
        by_port.setdefault(int(sock["port"]), []).append(sock)
    return [_held(host, svc, holder, held) for svc in services or [] for holder, held in _strays(svc, by_port).items()]


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

    ``folders``: ``[{"path", "exists", "source", "source_exists", "need", "fs", "free", "fetched"}]``:
    ``source`` when the folder is staged from there (``need``: bytes still to copy), ``fetched`` when
    it is fetched from its hub later in the run (its size is the hub's: the fetch checks the room),
    ``fs`` and ``free`` of the filesystem the folder is (or will be) on.
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
        elif not item.get("exists") and not item.get("fetched"):
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


def _in_networks(address, networks):
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    ip = getattr(ip, "ipv4_mapped", None) or ip
    return any(ip in ipaddress.ip_network(str(net).strip(), strict=False) for net in networks or [])


def check_ssh(host, session, networks, ports):
    """The firewall about to be loaded admits this run's own SSH session (client address and port)."""
    if not session:
        return []
    problems = []
    if not _in_networks(session["client"], networks):
        problems.append(
            Problem(
                host,
                "ssh",
                "this run's SSH comes from %s, and the firewall (k3_firewall) admits SSH only from "
                "k3_admin_networks (%s)" % (session["client"], ", ".join(str(n) for n in networks or []) or "none set"),
                "add %s (or its network) to k3_admin_networks, or set k3_firewall: false to leave the "
                "firewall to the site" % session["client"],
            )
        )
    if int(session["port"]) not in {int(p) for p in ports or []}:
        problems.append(
            Problem(
                host,
                "ssh",
                "this run's SSH reaches port %d, and the firewall admits SSH on %s only (ansible_port)"
                % (session["port"], ", ".join(str(p) for p in ports or []) or "no port"),
                "set ansible_port: %d for this host, or firewall_ssh_ports" % session["port"],
            )
        )
    return problems
