# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Fabric acceptance with the vendors' own tools: which tool runs where, from the plan alone.

Per platform (plugins/plugin_utils/data/fabric_tools.yml, ``tools``):

* every multi-node replica group runs the platform's collective tests across its hosts, launched
  from its first host: nccl-tests ``all_reduce_perf`` and ``alltoall_perf`` on NVIDIA, rccl-tests on
  MI355X, CANN's ``all_reduce_test`` (HCCL test) on Ascend where CANN ships it;
* every pair of hosts the plan connects over RDMA (each KV-cache path, prefill to decode; and each
  step of a multi-node group's ring where the cross-node fabric is RDMA, not NVLink) runs perftest's
  ``ib_write_bw``, ``ib_read_bw`` and ``ib_write_lat``, one RDMA device (rail) at a time on a port of
  its own, the data flowing the way it flows in service;
* on Ascend every NPU of every connected host reports its link and network health (``hccn_tool``),
  and pings the same NPU of each host the plan connects its host with.

The work is cut into steps a playbook runs in order: a step starts servers (perftest's) on some
hosts, runs commands on others (all of a host's commands at once) and stops the servers; within a
step no host takes part in two groups or pairs. :func:`checks` gives the steps and, per command, what
it checks (group or pair, why the plan connects it, the threshold); :mod:`._fabric_judge` judges
the results. Pure functions: no I/O but the data file.
"""

from __future__ import annotations

import functools
import os
import re

import yaml

from ansible_collections.kimi_k3.serving.plugins.plugin_utils._paths import DATA_DIR
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations._rolling import replica_groups
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations._units import docker_options

TOOLS_FILE = os.path.join(DATA_DIR, "fabric_tools.yml")
# perftest's default port: device i of a pair uses RDMA_PORT + i.
RDMA_PORT = 18515
RDMA_TESTS = ("ib_write_bw", "ib_read_bw", "ib_write_lat")
# The engines' variables a collective test runs with (the launcher hands them to every rank).
NETWORK_PREFIXES = ("NCCL_", "RCCL_", "HCCL_", "GLOO_", "UCX_")
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


class FabricToolsError(ValueError):
    """A fabric tool setting the check cannot use."""


@functools.lru_cache(maxsize=1)
def catalog():
    """The data file: ``{tools, line_rate_gbps, thresholds}``."""
    with open(TOOLS_FILE, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def merged(base, over):
    """``base`` with ``over`` laid on it, dict by dict (a new dict; lists and values replaced)."""
    out = dict(base or {})
    for key, value in (over or {}).items():
        out[key] = merged(out.get(key), value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def _dict_setting(settings, name):
    value = settings.get(name) or {}
    if not isinstance(value, dict):
        raise FabricToolsError("%s must be a mapping, not %r" % (name, value))
    return value


def _pings(settings):
    value = settings.get("fabric_hccn_pings") or "all"
    if value not in ("all", "rail"):
        raise FabricToolsError("fabric_hccn_pings must be all or rail, not %r" % (value,))
    return value


def _devices_per_node(plan, settings):
    value = settings.get("fabric_devices_per_node") or (plan.get("parameters") or {}).get("devices_per_node") or 8
    if isinstance(value, bool) or not str(value).isdigit() or int(value) < 1:
        raise FabricToolsError("fabric_devices_per_node must be a whole number above 0, not %r" % (value,))
    return int(value)


def tool_settings(plan, settings):
    """The platform, its interconnect, its tools and thresholds, with the inventory's overrides."""
    data = catalog()
    platform = settings.get("fabric_platform") or plan.get("platform")
    if platform and platform not in data["tools"]:
        raise FabricToolsError(
            "fabric_platform %r has no fabric tools; use one of %s" % (platform, ", ".join(sorted(data["tools"])))
        )
    interconnect = settings.get("fabric_interconnect") or (plan.get("parameters") or {}).get("fabric") or "rdma"
    if interconnect not in ("rdma", "nvlink"):
        raise FabricToolsError("fabric_interconnect must be rdma or nvlink, not %r" % (interconnect,))
    line = settings.get("fabric_rdma_gbps") or (data["line_rate_gbps"].get(platform) if platform else None)
    own = data["tools"].get(platform) or {} if platform else {}
    # The inventory's replacements apply to the tools this platform has (one fabric_tools can hold
    # every platform's programs, as the sandbox's does).
    over = {k: v for k, v in _dict_setting(settings, "fabric_tools").items() if k in own}
    return {
        "platform": platform,
        "interconnect": interconnect,
        "devices": _devices_per_node(plan, settings),
        "tools": _checked_tools(merged(own, over)),
        "thresholds": merged(data["thresholds"], _dict_setting(settings, "fabric_thresholds")),
        "line_rate_gbps": float(line) if line else None,
        "rdma_devices": list(settings.get("fabric_rdma_devices") or []),
        "image": settings.get("fabric_tools_image") or None,
        "pings": _pings(settings),
        "container": bool(settings.get("fabric_tools_container", True)),
    }


def _argv_list(value, where):
    if not isinstance(value, list) or not all(isinstance(a, str | int | float) for a in value):
        raise FabricToolsError("fabric_tools: %s must be a list of arguments, not %r" % (where, value))


def _checked_tools(tools):
    """The tools' commands, each of the shape the planner reads (a program, lists of arguments)."""
    _argv_list(tools.get("launcher") or [], "launcher")
    if tools.get("export") is not None and not isinstance(tools["export"], str):
        raise FabricToolsError(
            "fabric_tools: export must be the launcher's option (e.g. -x), not %r" % (tools["export"],)
        )
    for part in ("collectives", "rdma"):
        for test, tool in (tools.get(part) or {}).items():
            if not isinstance(tool, dict) or not isinstance(tool.get("program"), str) or not tool["program"]:
                raise FabricToolsError("fabric_tools: %s.%s needs a program (a path or a name)" % (part, test))
            _argv_list(tool.get("args") or [], "%s.%s.args" % (part, test))
    hccn = tools.get("hccn")
    if hccn is not None:
        if not isinstance(hccn.get("program"), str) or not hccn["program"]:
            raise FabricToolsError("fabric_tools: hccn needs a program (a path or a name)")
        for key in ("address", "link", "net_health", "ping"):
            _argv_list(hccn.get(key), "hccn.%s" % key)
    return tools


def fill(argv, values):
    """``argv`` with its ``{name}`` placeholders filled; a lone placeholder whose value is None goes,
    with the option before it (``-d {device}`` without a device: the tool's default device)."""
    out = []
    for arg in argv:
        arg = str(arg)
        whole = _PLACEHOLDER.fullmatch(arg)
        if whole and values.get(whole.group(1), "") is None:
            if out and out[-1].startswith("-"):
                out.pop()
            continue
        missing = [n for n in _PLACEHOLDER.findall(arg) if n not in values]
        if missing:
            raise FabricToolsError("unknown placeholder {%s} in %r (fabric_tools)" % (missing[0], arg))
        out.append(_PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), arg))
    return out


def _engine(plan, host):
    for svc in ((plan.get("hosts") or {}).get(host) or {}).get("services") or []:
        if svc.get("kind") == "vllm":
            return svc
    return {}


def host_ip(plan, host):
    """The plan's address of ``host``, or None."""
    return ((plan.get("hosts") or {}).get(host) or {}).get("ip")


def _nic(plan, host, settings):
    env = _engine(plan, host).get("env") or {}
    for key in ("NCCL_SOCKET_IFNAME", "HCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"):
        if env.get(key):
            return env[key]
    return settings.get("fabric_nic") or "eth0"


def rdma_devices(plan, host, st):
    """The host's RDMA devices, rail order: the plan's NCCL_IB_HCA, else fabric_rdma_devices, else
    [None] (one run on perftest's default device)."""
    hca = (_engine(plan, host).get("env") or {}).get("NCCL_IB_HCA")
    if hca:
        return [d.strip() for d in str(hca).split(",") if d.strip()]
    return st["rdma_devices"] or [None]


def wrapped(plan, host, argv, st, name, container=True):
    """``argv`` as it runs on ``host``: in the planned engine image with the engine's container
    options (host network, devices) where the host runs its engines with docker, else as it is
    (and always as it is for a host tool: ``container`` false)."""
    svc = _engine(plan, host)
    if not (container and st["container"]) or svc.get("runtime") != "docker":
        return list(argv)
    image = st["image"] or svc.get("image")
    if not image:
        raise FabricToolsError("%s: no image to run %s in (set fabric_tools_image)" % (host, argv[0]))
    opts = docker_options(svc.get("container"), "k3-fabric-" + re.sub(r"[^\w.-]+", "-", name), "-")[:-2]
    return ["docker", "run", *opts, "--entrypoint", argv[0], image, *argv[1:]]


def _group_why(group):
    return "%s group %s (%d hosts)" % (group["role"], group["id"], len(group["hosts"]))


def _exports(plan, host, tools):
    """``-x NAME=VALUE`` for each network variable of the host's engine the launcher does not set
    (one that holds the host's own address, like HCCL_IF_IP, would be wrong on the other ranks)."""
    flag = tools.get("export")
    if not flag:
        return []
    named = {str(a).split("=", 1)[0] for a in tools.get("launcher") or []}
    env = _engine(plan, host).get("env") or {}
    own = host_ip(plan, host)
    out = []
    for key in sorted(env):
        if key.startswith(NETWORK_PREFIXES) and key not in named and env[key] not in (None, own):
            out += [str(flag), "%s=%s" % (key, env[key])]
    return out


def _collectives(plan, st, hosts):
    """One check per multi-node group and collective test, launched from the group's first host."""
    tools = st["tools"]
    out = []
    for group in replica_groups(plan):
        members = group["hosts"]
        if len(members) < 2 or (hosts is not None and not set(members) <= set(hosts)):
            continue
        head = members[0]
        values = {
            "ranks": len(members) * st["devices"],
            "hosts": ",".join("%s:%d" % (host_ip(plan, h), st["devices"]) for h in members),
            "devices": st["devices"],
            "nic": _nic(plan, head, st),
        }
        launcher = fill(list(tools.get("launcher") or []), values) + _exports(plan, head, tools)
        for test, tool in (tools.get("collectives") or {}).items():
            name = "%s %s" % (test, group["id"])
            argv = launcher + fill([tool["program"]] + list(tool.get("args") or []), values)
            out.append(
                {
                    "name": name,
                    "kind": "hccl" if st["platform"] == "ascend" else "collective",
                    "test": test,
                    "subject": "group %s" % group["id"],
                    "why": [_group_why(group)],
                    "hosts": list(members),
                    "host": head,
                    "argv": wrapped(plan, head, argv, st, name),
                    "optional": bool(tool.get("optional")),
                }
            )
    return out


def _rdma(plan, st, pairs):
    """Per RDMA pair, test and device: a server on one host, a client on the other, data flowing
    src -> dst (ib_write_bw writes from src, ib_read_bw reads from dst)."""
    tools = st["tools"].get("rdma") or {}
    out = []
    for pair in pairs:
        src, dst = pair["src"], pair["dst"]
        for test in RDMA_TESTS:
            if test not in tools:
                continue
            client, server = (dst, src) if test == "ib_read_bw" else (src, dst)
            rails = list(zip(rdma_devices(plan, client, st), rdma_devices(plan, server, st), strict=False))
            for index, (cdev, sdev) in enumerate(rails):
                name = "%s %s%s" % (test, pair["name"], "" if cdev is None else " " + cdev)
                port = RDMA_PORT + index
                base = [tools[test]["program"], *tools[test].get("args", [])]
                server_argv = fill(base, {"device": sdev, "port": port})
                client_argv = fill(base, {"device": cdev, "port": port}) + [host_ip(plan, server)]
                out.append(
                    {
                        "name": name,
                        "kind": "rdma",
                        "test": test,
                        "subject": pair["name"] + ("" if cdev is None else " (%s -> %s)" % (cdev, sdev)),
                        "why": pair["why"],
                        "hosts": [client, server],
                        "host": client,
                        "server": server,
                        "server_argv": wrapped(plan, server, server_argv, st, name + " server"),
                        "argv": wrapped(plan, client, client_argv, st, name),
                    }
                )
    return out


def _hccn_hosts(plan, pairs):
    return list(dict.fromkeys(h for p in pairs for h in (p["src"], p["dst"])))


def _hccn_argv(plan, st, host, key, values, name):
    hccn = st["tools"].get("hccn") or {}
    argv = [hccn["program"], *fill(hccn[key], values)]
    return wrapped(plan, host, argv, st, name, container=bool(hccn.get("container")))


def address_runs(plan, st, pairs):
    """Ascend: per host, one ``hccn_tool -i N -ip -g`` per NPU (the addresses the pings aim at)."""
    if "hccn" not in st["tools"]:
        return {}
    return {
        host: [
            {
                "name": "hccn address %s npu %d" % (host, npu),
                "parser": "hccn_ip",
                "argv": _hccn_argv(plan, st, host, "address", {"npu": npu}, "address-%d" % npu),
            }
            for npu in range(st["devices"])
        ]
        for host in _hccn_hosts(plan, pairs)
    }


def _hccn_health(plan, st, host, npu):
    for what, parser in (("link", "hccn_link"), ("net_health", "hccn_net_health")):
        yield {
            "name": "hccn %s %s npu %d" % (what, host, npu),
            "kind": "hccn",
            "test": "hccn_tool -%s" % what,
            "parser": parser,
            "subject": "%s NPU %d" % (host, npu),
            "why": ["NPU network of %s" % host],
            "hosts": [host],
            "host": host,
            "argv": _hccn_argv(plan, st, host, what, {"npu": npu}, "%s-%d" % (what, npu)),
        }


def npu_addresses(addresses):
    """host -> {NPU: address}, from host -> {NPU: address} or host -> the address runs' results
    (each named ``... npu N``, its address in ``parsed``)."""
    out = {}
    for host, found in (addresses or {}).items():
        if isinstance(found, dict):
            out[host] = {int(npu): addr for npu, addr in found.items()}
            continue
        out[host] = {}
        for result in found or []:
            match = re.search(r"npu (\d+)$", str(result.get("name", "")))
            if match:
                out[host][int(match.group(1))] = (result.get("parsed") or {}).get("address")
    return out


def _hccn_pings(plan, st, pair, addresses):
    """From each NPU of the pair's first host to each NPU of the second (``fabric_hccn_pings: all``,
    every pair of device NICs), or to the NPU of the same number only (``rail``)."""
    src, dst = pair["src"], pair["dst"]
    for npu, peer in _npu_pairs(st):
        address = (addresses.get(dst) or {}).get(peer)
        check = {
            "name": "hccn ping %s npu %d -> %d" % (pair["name"], npu, peer),
            "kind": "hccn",
            "test": "hccn_tool -ping",
            "parser": "hccn_ping",
            "subject": "%s NPU %d -> %d" % (pair["name"], npu, peer),
            "why": pair["why"],
            "hosts": [src, dst],
            "host": src,
            "argv": None,
        }
        if address:
            values = {"npu": npu, "address": address}
            check["argv"] = _hccn_argv(plan, st, src, "ping", values, "ping-%d-%d" % (npu, peer))
        else:
            check["error"] = "NPU %d of %s has no network address (hccn_tool -i %d -ip -g printed none)" % (
                peer,
                dst,
                peer,
            )
        yield check


def _npu_pairs(st):
    devices = range(st["devices"])
    if st["pings"] == "rail":
        return [(npu, npu) for npu in devices]
    return [(npu, peer) for npu in devices for peer in devices]


def _hccn(plan, st, pairs, addresses):
    """Ascend: every NPU's link and health on every connected host, and its pings along each pair."""
    if "hccn" not in st["tools"] or addresses is None:
        return []
    out = []
    for host in _hccn_hosts(plan, pairs):
        for npu in range(st["devices"]):
            out.extend(_hccn_health(plan, st, host, npu))
    for pair in pairs:
        out.extend(_hccn_pings(plan, st, pair, addresses))
    return out


def in_rounds(items, hosts_of=lambda item: item["hosts"]):
    """``items`` in rounds in which no host is in two items (``hosts_of`` an item's hosts), greedily,
    in order: no measurement shares a host's link with another."""
    left, out = list(items), []
    while left:
        busy, this, later = set(), [], []
        for item in left:
            hosts = set(hosts_of(item))
            if busy & hosts:
                later.append(item)
                continue
            busy.update(hosts)
            this.append(item)
        out.append(this)
        left = later
    return out


def _run(check, argv_key="argv"):
    return {"name": check["name"], "argv": check[argv_key], "parser": check.get("parser") or check["kind"]}


def _add(mapping, host, run):
    mapping.setdefault(host, []).append(run)


def _step(label, checks, serve=False):
    step = {"label": label, "serve": {}, "run": {}}
    for check in checks:
        if check.get("argv") is None:
            continue
        if serve:
            _add(step["serve"], check["server"], dict(_run(check, "server_argv"), parser="perftest"))
        _add(step["run"], check["host"], dict(_run(check), parser="perftest") if serve else _run(check))
    return step


def _rdma_steps(found):
    """A round of pairs with no host in two; in it, one step per test (all rails at once)."""
    by_pair = {}
    for check in found:
        by_pair.setdefault(check["subject"].split(" (")[0], []).append(check)
    units = [{"hosts": checks[0]["hosts"], "checks": checks} for checks in by_pair.values()]
    steps = []
    for number, batch in enumerate(in_rounds(units), 1):
        for test in RDMA_TESTS:
            picked = [chk for unit in batch for chk in unit["checks"] if chk["test"] == test]
            if picked:
                steps.append(_step("rdma round %d: %s" % (number, test), picked, serve=True))
    return steps


def _rdma_pairs(pairs, st):
    """The pairs perftest measures: KV paths always, a group's ring where its fabric is RDMA."""
    if not st["tools"].get("rdma"):
        return []
    return [p for p in pairs if p["reverse"] or st["interconnect"] == "rdma"]


def checks(plan, settings, pairs, hosts=None, addresses=None):
    """What the vendor tools check: ``{platform, interconnect, settings, checks, steps, address_runs, lines}``.

    ``pairs``: the connected host pairs (:func:`._fabric.pairs`). ``steps`` run in order: each
    ``{label, serve: {host: [run]}, run: {host: [run]}}``, a run being ``{name, argv, parser}``.
    On Ascend, ``address_runs`` read the NPUs' addresses first; called again with ``addresses``
    (host -> NPU -> address), the pings join the steps.
    """
    st = tool_settings(plan, settings)
    if not st["platform"]:
        return {"platform": None, "checks": [], "steps": [], "address_runs": {}, "lines": [], "settings": st}
    collective = _collectives(plan, st, hosts)
    rdma = _rdma(plan, st, _rdma_pairs(pairs, st))
    hccn = _hccn(plan, st, pairs, None if addresses is None else npu_addresses(addresses))
    steps = [_step("collective round %d" % n, batch) for n, batch in enumerate(in_rounds(collective), 1)]
    steps += _rdma_steps(rdma)
    if hccn:
        steps.append(_step("NPU network", hccn))
    found = collective + rdma + hccn
    lines = [
        "%s fabric tools (%s): %d check(s) in %d step(s)" % (st["platform"], st["interconnect"], len(found), len(steps))
    ]
    for step in steps:
        lines.append(step["label"])
        for where, runs in (("serve on", step["serve"]), ("on", step["run"])):
            lines.extend(
                "  %s %s: %s" % (where, host, " ".join(r["argv"])) for host, items in runs.items() for r in items
            )
    return {
        "platform": st["platform"],
        "interconnect": st["interconnect"],
        "settings": {k: st[k] for k in ("devices", "line_rate_gbps", "thresholds")},
        "checks": [{k: v for k, v in c.items() if k not in ("argv", "server_argv")} for c in found],
        "steps": steps,
        "address_runs": address_runs(plan, st, pairs) if addresses is None else {},
        "lines": lines,
    }
