# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""kimi_k3.serving: a multi-node engine group that heals itself (one guard per member's host).

vLLM 0.32's headless followers have no liveness check on their node 0: their engine core talks to
node 0 over ZMQ sockets connected to ports node 0 picked at random, with no heartbeat. When node 0
dies, systemd restarts it on new ports and a new coordinator; the old follower keeps retrying the
dead ports, stays ``active`` and never rejoins, and node 0 waits for it: the group serves nothing.
When a follower dies, the follower systemd restarts cannot rejoin the node 0 that kept running (its
handshake socket is gone after start-up): again nothing is served.

What a member's host can see is its TCP connections to the others: a formed group holds
established connections between each follower's processes and node 0's address. This guard watches
them for one engine unit:

- on a follower's host (``--role follower --peer <node 0's address>``): once the unit has been
  connected to node 0 since it (re)started, a loss of every connection to node 0 for ``--grace``
  seconds restarts the unit (node 0 is gone or was restarted: rejoin it);
- on node 0's host (``--role node0 --peer <each follower's address>``): once every follower has
  been connected since the unit (re)started, a follower without a connection for ``--grace``
  seconds restarts node 0 (a restarted follower can only join a new node 0; the followers' guards
  then restart them in turn).

A process of the unit that started before the unit's current start (left behind by an earlier
instance, which systemd did not stop) is killed. A restart of the unit by anyone (systemd, an
operator, a playbook) disarms the guard until the group has formed again, so a planned rolling
restart is not doubled; a unit that is not active (stopped on purpose) is left alone. Standard
library only; it runs as root (it restarts the unit and reads other processes' sockets), logs one
line per decision to the journal.

    python3 k3_group_guard.py --unit k3-engine --role follower --peer 10.0.0.12 [--grace 30] [--interval 5]
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import subprocess
import sys
import time

ESTABLISHED = "01"


def _address(hex_address):
    """The IP of a /proc/net/tcp{,6} address field (``0100007F:1F90``), as text."""
    host = hex_address.split(":", 1)[0]
    raw = bytes.fromhex(host)
    # The kernel prints each 32-bit word in host (little-endian) order.
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    address = ipaddress.ip_address(words)
    if address.version == 6 and address.ipv4_mapped:
        address = address.ipv4_mapped
    return str(address)


def established_inodes(tables, peers):
    """{peer: set of socket inodes} of the established TCP connections with each peer address.

    ``tables``: the text of /proc/net/tcp and /proc/net/tcp6.
    """
    out = {peer: set() for peer in peers}
    for text in tables:
        for line in text.splitlines()[1:]:
            fields = line.split()
            if len(fields) < 10 or fields[3] != ESTABLISHED:
                continue
            remote = _address(fields[2])
            if remote in out:
                out[remote].add(fields[9])
    return out


def process_inodes(pids, proc="/proc"):
    """The socket inodes the processes ``pids`` hold open."""
    inodes = set()
    for pid in pids:
        folder = os.path.join(proc, str(pid), "fd")
        try:
            names = os.listdir(folder)
        except OSError:
            continue  # gone, or not ours to read
        for name in names:
            try:
                target = os.readlink(os.path.join(folder, name))
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    return inodes


def connections(tables, peers, inodes):
    """{peer: number of established connections between the unit's processes and that peer}."""
    return {peer: len(found & inodes) for peer, found in established_inodes(tables, peers).items()}


class Guard:
    """The guard's decisions, apart from the host: fed one observation per interval."""

    def __init__(self, role, peers, grace):
        self.role = role
        self.peers = list(peers)
        self.grace = grace
        self.started = None  # the unit's start the guard is armed for
        self.seen = set()  # peers connected since that start
        self.missing_since = {}

    def observe(self, now, active, started, counts):
        """``"restart"`` when the unit must restart now, else ``None``; ``counts``: peer -> connections."""
        if not active or started != self.started:
            # Stopped on purpose, or (re)started by anyone: wait for the group to form again.
            self.started, self.seen, self.missing_since = (started if active else None), set(), {}
            if not active:
                return None
        for peer in self.peers:
            if counts.get(peer, 0) > 0:
                self.seen.add(peer)
                self.missing_since.pop(peer, None)
            elif peer in self.seen:
                self.missing_since.setdefault(peer, now)
        formed = self.seen == set(self.peers)
        if not formed:
            return None
        lost = [p for p, since in self.missing_since.items() if now - since >= self.grace]
        if lost:
            self.seen, self.missing_since = set(), {}
            return "restart"
        return None


def unit_pids(group, proc="/proc"):
    """The processes in the control group ``group`` (a unit's ControlGroup) or below it.

    Read from each process's /proc/<pid>/cgroup, which names its group on cgroup v2, v1 and the
    hybrid layout alike (the cgroup file system's own layout differs between them).
    """
    pids = set()
    if not group:
        return pids
    for name in os.listdir(proc):
        if not name.isdigit():
            continue
        try:
            with open(os.path.join(proc, name, "cgroup")) as handle:
                lines = handle.read().splitlines()
        except OSError:
            continue
        for line in lines:
            path = line.split(":", 2)[-1]
            if path == group or path.startswith(group + "/"):
                pids.add(int(name))
                break
    return pids


def leftovers(pids, started_us, proc="/proc", margin=2.0):
    """The processes of ``pids`` that started before the unit's current start (``started_us``, its
    ActiveEnterTimestampMonotonic): what an earlier instance left behind when systemd missed them."""
    if not started_us:
        return set()
    ticks = os.sysconf("SC_CLK_TCK")
    out = set()
    for pid in pids:
        try:
            with open(os.path.join(proc, str(pid), "stat")) as handle:
                stat = handle.read()
        except OSError:
            continue
        # After the command's closing parenthesis: field 3 onwards; starttime is field 22.
        fields = stat.rsplit(")", 1)[1].split()
        started = int(fields[19]) / ticks
        if started < int(started_us) / 1e6 - margin:
            out.add(pid)
    return out


def _unit(unit):
    """(active, its start's monotonic timestamp, its processes)."""
    out = subprocess.run(
        ["systemctl", "show", "-p", "ActiveState,ActiveEnterTimestampMonotonic,ControlGroup", unit],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    props = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    pids = unit_pids(props.get("ControlGroup") or "")
    return props.get("ActiveState") == "active", props.get("ActiveEnterTimestampMonotonic"), pids


def _tables():
    texts = []
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as handle:
                texts.append(handle.read())
        except OSError:
            pass
    return texts


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--unit", required=True)
    parser.add_argument("--role", required=True, choices=("node0", "follower"))
    parser.add_argument("--peer", action="append", required=True, help="node 0's address, or each follower's")
    parser.add_argument("--grace", type=float, default=30.0)
    parser.add_argument("--interval", type=float, default=5.0)
    args = parser.parse_args(argv)
    guard = Guard(args.role, args.peer, args.grace)
    print("watching %s (%s) for %s, grace %gs" % (args.unit, args.role, ", ".join(args.peer), args.grace), flush=True)
    while True:
        active, started, pids = _unit(args.unit)
        stale = leftovers(pids, started) if active else set()
        if stale:
            # systemd did not stop them with the earlier instance (seen on hosts whose cgroups lose
            # track of a stop): a leftover DP coordinator keeps the group's followers connected.
            print("%s: killing %s, left over from before its start" % (args.unit, sorted(stale)), flush=True)
            for pid in stale:
                try:
                    os.kill(pid, 9)
                except OSError:
                    pass
            pids -= stale
        counts = connections(_tables(), args.peer, process_inodes(pids)) if active else {}
        if guard.observe(time.monotonic(), active, started, counts) == "restart":
            print("%s lost its group (connections %s): restarting it" % (args.unit, counts), flush=True)
            subprocess.run(["systemctl", "restart", "--no-block", args.unit], check=False)
        time.sleep(args.interval)


if __name__ == "__main__":
    sys.exit(main())
