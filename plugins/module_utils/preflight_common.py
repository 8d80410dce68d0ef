# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Host preflight, what its files share: the :class:`Problem` every check returns, and port numbers.

The planner checks the inventory; the preflight checks the hosts against the plan before anything
changes:

* the planned address (``hosts[h].ip``) is an address of the host, owned by the interface the
  socket-interface variables (``k3_nic``, ``*_SOCKET_IFNAME``) name;
* every planned port is free, or held by the service's own unit;
* every planned connection between hosts goes through (short-lived listeners, then connections);
* no proxy variable would send cluster traffic through a proxy;
* the clock agrees with the controller's;
* there is room for the checkpoint, and ``/dev/shm`` is as large as the services need.

Its code is laid out by job, one module_utils file each (shipped to the hosts with the modules that
import them: Python 3.8+, standard library only, no Ansible imports - a gathering function that runs
a command is handed the module):

* ``preflight_common`` - this file;
* ``preflight_connections`` - the planned connections between hosts, from the plan alone, and what
  the connection test's results mean;
* ``preflight_parse`` - what the host's files and commands say, turned into data (no I/O);
* ``preflight_gather`` - reading the host: /proc, /sys, /etc, commands;
* ``preflight_checks`` - what a host's gathered facts mean for the plan (no I/O);
* ``preflight_proxies`` - whether a proxy variable would catch a service's cluster traffic (no I/O);
* ``preflight_listener`` - the connection test's detached listener and its process handling;
* ``preflight_connect`` - the connection test's connections to the other hosts' listeners.
"""

from __future__ import annotations

# The listeners' process name: a port check that meets one (of a run that just ended) does not count it.
LISTENER_NAME = "k3-preflight"


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
