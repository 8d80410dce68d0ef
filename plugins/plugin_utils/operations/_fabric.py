# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Fabric acceptance: which hosts must carry traffic between them, in what order to measure them,
and what the measurements mean.

From the plan alone: every multi-node replica group (a data-parallel, tensor- or pipeline-parallel
group whose members are on several hosts) and every KV-cache path (a decode engine pulls the KV
cache from each prefill engine over the network: NIXL, MoRIIO, Mooncake) gives the host pairs
that carry its traffic. A group of two hosts is measured both ways; a larger one as a ring (each
member to the next), which is the path a ring all-reduce takes. A KV path is measured in the
direction its data flows: from the prefill host to the decode host.

The pairs are measured in rounds: within a round no host takes part in two pairs, so that no
measurement shares a host's link with another. Each measurement is made by the client host of
its pair (the host that opens the connection in service: the decode host for a KV path, the
group member for a ring step), with ``reverse`` where the data flows towards it.

:func:`report` compares each result with its threshold and says, for one that falls short, the
pair, why the plan connects it, the figure and the threshold. Pure functions: no I/O.
"""

from __future__ import annotations

import math

from ansible_collections.kimi_k3.serving.plugins.module_utils.fabric_iperf import client_argv
from ansible_collections.kimi_k3.serving.plugins.module_utils.preflight_connections import KV_PORTS, connections
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations import _fabric_judge, _fabric_tools
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations._rolling import replica_groups


class FabricError(ValueError):
    """A setting the fabric check cannot use."""


def _group_pairs(plan):
    """(src, dst, why) of each multi-node group's ring, data flowing from src to dst."""
    for group in replica_groups(plan):
        hosts = group["hosts"]
        if len(hosts) < 2:
            continue
        what = "%s group %s (%d hosts)" % (group["role"], group["id"], len(hosts))
        # Each member to the next, the last to the first: for two hosts, both ways.
        for src, dst in zip(hosts, hosts[1:] + hosts[:1], strict=True):
            yield src, dst, what


def _kv_pairs(plan):
    """(prefill host, decode host, why) of each KV-cache path of the plan."""
    seen = set()
    for conn in connections(plan):
        if conn["name"].split(" ", 1)[-1] not in KV_PORTS or conn["src"] == conn["dst"]:
            continue
        key = (conn["dst"], conn["src"])
        if key in seen:
            continue
        seen.add(key)
        yield (
            conn["dst"],
            conn["src"],
            "KV cache %s/%s -> %s/%s"
            % (
                conn["dst"],
                conn["dst_service"],
                conn["src"],
                conn["src_service"],
            ),
        )


def pairs(plan, hosts=None):
    """The pairs to measure: ``[{name, src, dst, why: [..], client, server, reverse}]``, in plan order.

    ``src`` -> ``dst`` is the direction the data flows; ``client`` opens the connection (``dst`` for
    a KV path, where the decode engine connects to its prefill engine; ``src`` for a group's ring),
    so ``reverse`` says whether the server sends. ``hosts`` (e.g. a ``--limit``) keeps the pairs
    whose two hosts are both in it.
    """
    found = {}
    for src, dst, why, kv in [(*p, False) for p in _group_pairs(plan)] + [(*p, True) for p in _kv_pairs(plan)]:
        if hosts is not None and not (src in hosts and dst in hosts):
            continue
        pair = found.get((src, dst))
        if pair is None:
            client, server = (dst, src) if kv else (src, dst)
            pair = found[(src, dst)] = {
                "name": "%s -> %s" % (src, dst),
                "src": src,
                "dst": dst,
                "why": [],
                "client": client,
                "server": server,
                "server_ip": _fabric_tools.host_ip(plan, server),
                "reverse": kv,
            }
        if why not in pair["why"]:
            pair["why"].append(why)
    return list(found.values())


def rounds(measured):
    """``measured`` (pairs) in rounds in which no host is in two pairs, greedily, in order."""
    return _fabric_tools.in_rounds(measured, lambda pair: (pair["client"], pair["server"]))


def _positive(settings, name, kind=float):
    """A setting above 0 (a whole number for ``kind=int``); strings of numbers (``-e``) too."""
    value = settings.get(name)
    bad = FabricError("%s must be a%s number above 0, not %r" % (name, " whole" if kind is int else "", value))
    if isinstance(value, bool):
        raise bad
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise bad from None
    if math.isnan(number) or number <= 0 or (kind is int and not number.is_integer()):
        raise bad
    return kind(number)


def prepare(plan, settings, hosts=None, addresses=None):
    """What the check runs: ``{pairs, rounds, hosts, servers, settings, tools, lines}``.

    ``rounds`` is one mapping per round, client host -> what it measures (the pair's name, the
    server's address, the port, whether reversed), the shape a host task reads with its own name.
    ``settings``: fabric_port, fabric_tcp_seconds, fabric_tcp_streams, fabric_tcp_min_gbps, and
    fabric_iperf3 (the program, for the commands shown), and the vendor tools' settings
    (:func:`._fabric_tools.tool_settings`; fabric_vendor_tools false leaves them out). ``tools``:
    what the vendor tools check (:func:`._fabric_tools.checks`, ``addresses`` the Ascend NPUs').
    ``lines`` says it all for the operator.
    """
    checked = {
        "port": _positive(settings, "fabric_port", int),
        "seconds": _positive(settings, "fabric_tcp_seconds", int),
        "streams": _positive(settings, "fabric_tcp_streams", int),
        "min_gbps": _positive(settings, "fabric_tcp_min_gbps"),
    }
    if checked["port"] > 65535:
        raise FabricError("fabric_port must be a TCP port (1-65535), not %r" % settings.get("fabric_port"))
    found = pairs(plan, hosts)
    for pair in found:
        if not pair["server_ip"]:
            raise FabricError("%s: the plan has no address for %s" % (pair["name"], pair["server"]))
    batches = rounds(found)
    program = str(settings.get("fabric_iperf3") or "iperf3")
    lines = [
        "%d pair(s) in %d round(s), TCP for %d s with %d streams, threshold %s Gbit/s (fabric_tcp_min_gbps)"
        % (len(found), len(batches), checked["seconds"], checked["streams"], checked["min_gbps"])
    ]
    for number, batch in enumerate(batches, 1):
        for pair in batch:
            argv = client_argv(
                program, pair["server_ip"], checked["port"], checked["seconds"], checked["streams"], pair["reverse"]
            )
            lines.append("round %d: %s: %s" % (number, pair["name"], "; ".join(pair["why"])))
            lines.append("  on %s: %s" % (pair["client"], " ".join(argv)))
    scheduled = [
        {
            p["client"]: {"pair": p["name"], "server": p["server_ip"], "port": checked["port"], "reverse": p["reverse"]}
            for p in batch
        }
        for batch in batches
    ]
    tools = {"platform": None, "checks": [], "steps": [], "address_runs": {}, "lines": []}
    if str(settings.get("fabric_vendor_tools", True)).lower() not in ("false", "0", "no", "off", ""):
        try:
            tools = _fabric_tools.checks(plan, settings, found, hosts, addresses)
        except _fabric_tools.FabricToolsError as exc:
            raise FabricError(str(exc)) from None
    return {
        "pairs": found,
        "rounds": scheduled,
        # Every host taking part, in plan order (dict keys keep the first place of each).
        "hosts": list(dict.fromkeys(h for p in found for h in (p["client"], p["server"]))),
        "servers": sorted({p["server"] for p in found}),
        "settings": checked,
        "tools": tools,
        "lines": lines + tools["lines"],
    }


def _result_of(measurements, pair):
    for item in measurements:
        if isinstance(item, dict) and item.get("pair") == pair["name"]:
            return item
    return None


def report(prepared, measurements, tool_results=None):
    """Each pair's figure against the threshold, and each vendor tool's check:
    ``{results, tools, problems, lines}``.

    ``measurements``: what the hosts measured (fabric_tcp's results, each with its ``pair``). A pair
    without a result, or whose measurement failed, is a problem as much as one below the threshold.
    ``tool_results``: fabric_tool's results (each with its ``name``), judged by
    :func:`._fabric_judge.report`.
    """
    minimum = prepared["settings"]["min_gbps"]
    results, problems = [], []
    for pair in prepared["pairs"]:
        got = _result_of(measurements, pair) or {}
        gbps = got.get("gbps")
        row = {
            "pair": pair["name"],
            "why": pair["why"],
            "test": "tcp",
            "gbps": gbps,
            "retransmits": got.get("retransmits"),
            "threshold_gbps": minimum,
            "error": got.get("error"),
        }
        why = "; ".join(pair["why"])
        if gbps is None:
            row["passed"] = False
            problems.append(
                "%s (%s): no TCP figure: %s" % (pair["name"], why, got.get("error") or "the pair was not measured")
            )
        else:
            row["passed"] = gbps >= minimum
            if not row["passed"]:
                problems.append(
                    "%s (%s): TCP %.2f Gbit/s, below the threshold %.2f Gbit/s (fabric_tcp_min_gbps)"
                    % (pair["name"], why, gbps, minimum)
                )
        results.append(row)
    lines = [
        "%-40s %10s %8s  %s"
        % (
            r["pair"],
            "-" if r["gbps"] is None else "%.2f" % r["gbps"],
            "pass" if r["passed"] else "FAIL",
            "; ".join(r["why"]),
        )
        for r in results
    ]
    header = "%-40s %10s %8s  %s" % ("PAIR", "GBIT/S", "RESULT", "WHY")
    by_name = {r["name"]: r for r in tool_results or [] if isinstance(r, dict) and r.get("name")}
    tools = _fabric_judge.report(prepared.get("tools") or {}, by_name)
    table = [header, *lines] if results else []
    return {
        "results": results,
        "tools": tools["rows"],
        "outputs": _fabric_judge.outputs(tool_results),
        "problems": problems + tools["problems"],
        "lines": table + ([""] if table and tools["lines"] else []) + tools["lines"],
    }
