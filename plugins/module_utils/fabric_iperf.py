# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""iperf3 for the fabric check: its command lines, and what its JSON output (``-J``) says.

Pure functions: the module runs the commands. The figure is what the receiving side counted
(``end.sum_received``): with ``-R`` the server sends and the client receives, without it the
other way round; iperf3 reports both sides in the client's output.
"""

from __future__ import annotations

import json

PIDFILE = "/run/kimi-k3-fabric-iperf3.pid"


def server_argv(program, port, pidfile=PIDFILE):
    """A daemon (``-D``) on ``port``, its PID in ``pidfile``: one client at a time, until stopped."""
    return [program, "--server", "--port", str(port), "--daemon", "--pidfile", pidfile]


def client_argv(program, server, port, seconds, streams, reverse):
    """A TCP test against ``server``, JSON out; ``reverse``: the server sends."""
    argv = [program, "--client", server, "--port", str(port), "--time", str(seconds)]
    argv += ["--parallel", str(streams), "--json", "--connect-timeout", "5000"]
    return argv + (["--reverse"] if reverse else [])


def _failed(error):
    return {"gbps": None, "retransmits": None, "seconds": None, "error": error}


def parse(text):
    """``{gbps, retransmits, seconds, error}`` of iperf3's JSON output (``error`` set, no figure, on a
    failed test or an output that is not iperf3's)."""
    try:
        data = json.loads(text)
    except (TypeError, ValueError):
        first = (text or "").strip().splitlines()[:1]
        return _failed("not iperf3's JSON: %s" % (first or [""])[0])
    if not isinstance(data, dict):
        return _failed("not iperf3's JSON")
    end = data.get("end") or {}
    received = end.get("sum_received") or {}
    if data.get("error") or "bits_per_second" not in received:
        return _failed("iperf3: %s" % (data.get("error") or "no result in its output"))
    sent = end.get("sum_sent") or {}
    return {
        "gbps": round(received["bits_per_second"] / 1e9, 3),
        "retransmits": sent.get("retransmits"),
        "seconds": round(received.get("seconds") or 0.0, 3),
        "error": None,
    }
