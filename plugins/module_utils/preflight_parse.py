# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Host preflight: what the host's files and commands say, turned into data (pure functions, no I/O).

``preflight_gather`` reads the text; the functions here parse it, so that they are table-tested on
recorded inputs: interfaces (``ip -j addr``), listening sockets (``/proc/net/tcp``), the unit or
container of a process (``/proc/PID/cgroup``), and the environment a service would inherit
(``/etc/environment``, systemd units, docker's configuration).
"""

from __future__ import annotations

import json
import shlex
import socket


# ---------------------------------------------------------------------------------------- interfaces and sockets
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


# ---------------------------------------------------------------------------------------- environment and proxies
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


def parse_ssh_connection(value):
    """``SSH_CONNECTION`` ("client port server port") -> ``{client, client_port, server, port}``, or None."""
    words = (value or "").split()
    if len(words) != 4 or not (words[1].isdigit() and words[3].isdigit()):
        return None
    return {"client": words[0], "client_port": int(words[1]), "server": words[2], "port": int(words[3])}


def parse_environ(raw):
    """A /proc/PID/environ (NUL-separated NAME=value) -> dict."""
    out = {}
    for item in (raw or b"").split(b"\0"):
        name, sep, value = item.partition(b"=")
        if sep:
            out[name.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    return out


def parent_pid(stat):
    """The parent's PID from a /proc/PID/stat line (after the command in parentheses), or 0."""
    fields = (stat or "").rpartition(")")[2].split()
    return int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else 0
