# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Host preflight: whether a proxy variable would send a service's cluster traffic through a proxy.

What a service sees is layered: what it inherits (a host-runtime unit: /etc/environment and
systemd's manager environment; a docker-runtime container: docker's drop-ins, daemon.json and the
client's config.json, parsed by ``preflight_parse``), then its planned environment, then its
recipe's ``shell.unset``. A proxy variable is a problem unless that environment's ``no_proxy`` (or
``NO_PROXY``) covers every address the service talks to. Pure functions: no I/O.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from ansible_collections.kimi_k3.serving.plugins.module_utils.preflight_common import Problem

# Proxy variables that capture HTTP(S) clients (checked in any case); ftp_proxy carries no cluster traffic.
PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy")
# Where the planned environment's variables are said to be set.
PLANNED = "the planned environment (k3_env or the profile)"


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


def _environment(svc, host_sources, docker_sources):
    """var -> (value, where it is set) of what a service sees: inherited, then planned, less ``shell.unset``."""
    layers = list(docker_sources or []) if svc.get("runtime") == "docker" else list(host_sources or [])
    layers.append((PLANNED, svc.get("env") or {}))
    effective = {}
    for label, env in layers:
        for key, value in (env or {}).items():
            effective[key] = (str(value), label)
    for key in set((svc.get("shell") or {}).get("unset") or []):
        effective.pop(key, None)
    return effective


def _through_proxy(host, service, key, setting, uncovered):
    """The proxy variable ``key`` (``setting``: its value and where it is set) catches ``uncovered``."""
    value, label = setting
    planned = label.startswith("the planned environment")
    return Problem(
        host,
        "k3_env.%s" % key if planned else key,
        "%s=%s (set in %s) would send %s's traffic to %s through the proxy"
        % (key, mask_url(value), label, service, ", ".join(uncovered)),
        (
            "remove %s from k3_env (the recipes unset the proxy variables), or add %s to no_proxy there"
            if planned
            else "remove %s from " + label + ", or add %s to its no_proxy/NO_PROXY"
        )
        % (key, ",".join(uncovered)),
    )


def _service_problems(host, svc, environment, addresses):
    """The proxy variables of a service's ``environment`` its no_proxy leaves ``addresses`` to."""
    if "no_proxy" in environment:
        no_proxy = environment["no_proxy"][0]
    else:
        no_proxy = environment.get("NO_PROXY", ("", None))[0]
    problems = []
    for key in sorted(environment):
        if not _proxy_name(key) or not environment[key][0]:
            continue
        uncovered = [a for a in addresses if not no_proxy_covers(no_proxy, a)]
        if uncovered:
            problems.append(_through_proxy(host, svc["name"], key, environment[key], uncovered))
    return problems


# The unit tests call it with all six arguments positionally.
def check_proxies(host, ip, services, talks_to, host_sources, docker_sources=None):  # noqa: PLR0913, PLR0917
    """No proxy variable a service would see sends its cluster traffic through a proxy.

    ``host_sources`` and ``docker_sources`` are ``[(label, {var: value})]`` in the order they apply
    (later wins): what a host-runtime unit inherits, and what a docker-runtime container gets; the
    planned environment applies last, then the service's ``shell.unset``.
    """
    problems = []
    for svc in services or []:
        addresses = list(talks_to.get(svc["name"]) or [])
        if ip and ip not in addresses:
            addresses.append(ip)
        problems += _service_problems(host, svc, _environment(svc, host_sources, docker_sources), addresses)
    return problems
