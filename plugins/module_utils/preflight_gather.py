# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Host preflight: reading the host - /proc, /sys, /etc, /dev/shm, the checkpoint folders, commands.

What ``preflight_checks`` and ``preflight_proxies`` judge: the interfaces and their addresses, the
processes holding the planned ports, the environment a service would inherit, the room for the
checkpoint and the size of ``/dev/shm``. Reads only; parsing is ``preflight_parse``'s. The
functions that run a command are handed the module (``get_bin_path``, ``run_command``).
"""

from __future__ import annotations

import fcntl
import glob
import ipaddress
import json
import os
import socket
import struct

from ansible_collections.kimi_k3.serving.plugins.module_utils.preflight_parse import (
    docker_client_proxies,
    docker_daemon_proxies,
    parent_pid,
    parse_env_lines,
    parse_environ,
    parse_ip_json,
    parse_proc_net_tcp,
    parse_ssh_connection,
    parse_unit_environment,
    unit_of_cgroup,
)

SIOCGIFADDR = 0x8915
C_LOCALE = {"LC_ALL": "C"}


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def read_json(path):
    text = read(path)
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


# ---------------------------------------------------------------------------------------- interfaces
def interfaces(module):
    """The host's interfaces: ``[{"name", "state", "addresses"}]`` (``ip -j addr``, else /sys and an ioctl)."""
    ip = module.get_bin_path("ip")
    if ip:
        rc, out, _err = module.run_command([ip, "-j", "addr", "show"], environ_update=C_LOCALE)
        if rc == 0:
            try:
                return parse_ip_json(out)
            except ValueError:
                pass
    return _interfaces_without_iproute2()


def _ipv6_addresses():
    """Interface name -> its IPv6 addresses, from /proc/net/if_inet6."""
    v6 = {}
    for line in (read("/proc/net/if_inet6") or "").splitlines():
        fields = line.split()
        if len(fields) >= 6:
            v6.setdefault(fields[5], []).append(str(ipaddress.ip_address(bytes.fromhex(fields[0]))))
    return v6


def _ipv4_address(probe, name):
    """The IPv4 address of an interface (a list of at most one), from the SIOCGIFADDR ioctl."""
    try:
        packed = fcntl.ioctl(probe.fileno(), SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
    except OSError:
        return []
    return [socket.inet_ntoa(packed[20:24])]


def _interfaces_without_iproute2():
    """Without iproute2: names from /sys, IPv4 from an ioctl, IPv6 from /proc/net/if_inet6."""
    out = []
    v6 = _ipv6_addresses()
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        for name in sorted(os.listdir("/sys/class/net")):
            state = (read("/sys/class/net/%s/operstate" % name) or "").strip().upper() or None
            out.append({"name": name, "state": state, "addresses": _ipv4_address(probe, name) + v6.get(name, [])})
    finally:
        probe.close()
    return out


def resolve(ip):
    """The addresses a planned host name resolves to ([] for an address)."""
    try:
        ipaddress.ip_address(ip)
        return []
    except ValueError:
        pass
    try:
        return sorted({info[4][0] for info in socket.getaddrinfo(ip, None)})
    except OSError:
        return []


# ---------------------------------------------------------------------------------------- ports
def _fd_links(pid):
    """What the open descriptors of process ``pid`` point at (``socket:[inode]`` for a socket)."""
    try:
        fds = os.listdir("/proc/%s/fd" % pid)
    except OSError:
        return
    for fd in fds:
        try:
            yield os.readlink("/proc/%s/fd/%s" % (pid, fd))
        except OSError:
            continue


def _socket_owners(wanted):
    """``socket:[inode]`` -> the pid of the first process found holding it, for the ``wanted`` sockets."""
    owners = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        for link in _fd_links(pid):
            if link in wanted and link not in owners:
                owners[link] = int(pid)
        if len(owners) == len(wanted):
            break
    return owners


def _holder(pid):
    """Name, command line and unit (systemd's, or a docker container's name) of process ``pid``."""
    comm = (read("/proc/%d/comm" % pid) or "").strip()
    cmdline = (read("/proc/%d/cmdline" % pid) or "").replace("\0", " ").strip()
    unit, container = unit_of_cgroup(read("/proc/%d/cgroup" % pid))
    if container:
        config = read_json("/var/lib/docker/containers/%s/config.v2.json" % container) or {}
        unit = (config.get("Name") or "").lstrip("/") or "docker container %s" % container[:12]
    return {"comm": comm, "command": (cmdline or comm)[:160], "unit": unit}


def listeners(ports):
    """Listening TCP sockets on ``ports``, each with the process (pid, command, unit) holding it."""
    socks = []
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        socks += [s for s in parse_proc_net_tcp(read(path)) if s["port"] in ports]
    wanted = {"socket:[%s]" % s["inode"]: s for s in socks}
    owners = _socket_owners(wanted) if wanted else {}
    out = []
    for link, sock in wanted.items():
        pid = owners.get(link)
        entry = {"port": sock["port"], "address": sock["address"], "pid": pid, "command": None, "unit": None}
        if pid:
            entry.update(_holder(pid))
        out.append(entry)
    return sorted(out, key=lambda e: (e["port"], e["address"]))


# ---------------------------------------------------------------------------------------- environment
def host_environment(module):
    """What a host-runtime unit inherits: ``[(label, {var: value})]``, in the order they apply."""
    sources = [("/etc/environment", parse_env_lines(read("/etc/environment")))]
    systemctl = module.get_bin_path("systemctl")
    if systemctl:
        rc, out, _err = module.run_command([systemctl, "show-environment"], environ_update=C_LOCALE)
        if rc == 0:
            sources.append(("systemd's manager environment (systemctl show-environment)", parse_env_lines(out)))
    return sources


def docker_environment(client_config):
    """What a docker-runtime container gets: ``[(label, {var: value})]``, in the order they apply."""
    sources = []
    for path in sorted(
        glob.glob("/etc/systemd/system/docker.service.d/*.conf")
        + glob.glob("/run/systemd/system/docker.service.d/*.conf")
    ):
        sources.append(("docker's systemd drop-in %s" % path, parse_unit_environment(read(path))))
    sources.append(("/etc/docker/daemon.json (proxies)", docker_daemon_proxies(read_json("/etc/docker/daemon.json"))))
    sources.append(
        (
            "%s (proxies the docker client injects)" % client_config,
            docker_client_proxies(read_json(client_config)),
        )
    )
    return sources


# ---------------------------------------------------------------------------------------- disk and /dev/shm
def nearest_existing(path):
    path = os.path.abspath(path)
    while not os.path.exists(path) and path != "/":
        path = os.path.dirname(path)
    return path


def sizes(root):
    out = {}
    for folder, _dirs, files in os.walk(root):
        for name in files:
            full = os.path.join(folder, name)
            try:
                out[os.path.relpath(full, root)] = os.stat(full).st_size
            except OSError:
                continue
    return out


def _staging(path, source, exists):
    """What staging ``path`` from ``source`` takes: source_exists, and the bytes still to copy."""
    entry = {"source": source, "source_exists": os.path.isdir(source)}
    if entry["source_exists"]:
        have = sizes(path) if exists else {}
        entry["need"] = sum(size for rel, size in sizes(source).items() if have.get(rel) != size)
    return entry


def _filesystem(path):
    """fs (its device) and free bytes of the filesystem ``path`` is, or will be, on."""
    base = nearest_existing(path)
    try:
        st = os.statvfs(base)
        return {"fs": os.stat(base).st_dev, "free": st.f_bavail * st.f_frsize}
    except OSError:
        return {"fs": base, "free": None}


def folders(paths, sources):
    """Each checkpoint folder: whether it exists, what staging it takes, and its filesystem's room."""
    sources = {k.rstrip("/") or "/": v for k, v in (sources or {}).items()}
    out = []
    for item in paths:
        path = item["path"]
        entry = {"path": path, "draft": bool(item.get("draft")), "exists": os.path.isdir(path)}
        if item.get("fetched"):
            entry["fetched"] = True  # brought from its hub later in the run
        source = sources.get(path.rstrip("/") or "/")
        if source:
            entry.update(_staging(path, source, entry["exists"]))
        entry.update(_filesystem(path))
        out.append(entry)
    return out


def shm_size():
    """Size of /dev/shm in bytes (None when there is none)."""
    if not os.path.isdir("/dev/shm"):
        return None
    try:
        st = os.statvfs("/dev/shm")
    except OSError:
        return None
    return st.f_blocks * st.f_frsize


def ssh_session(proc="/proc", environ=None):
    """The SSH session this module runs in, as the host sees it: ``{client, client_port, server, port}``.

    ``SSH_CONNECTION`` of this process, or of the nearest ancestor that has it (become tools such as
    sudo drop it from the environment they pass on; root reads the ancestors' environ). None when
    the module does not run over SSH (a local or container connection).
    """
    found = parse_ssh_connection((os.environ if environ is None else environ).get("SSH_CONNECTION"))
    pid = os.getppid()
    for _hop in range(32):
        if found or pid <= 1:
            break
        try:
            with open("%s/%d/environ" % (proc, pid), "rb") as handle:
                found = parse_ssh_connection(parse_environ(handle.read()).get("SSH_CONNECTION"))
        except OSError:
            break
        pid = parent_pid(read("%s/%d/stat" % (proc, pid)))
    return found
