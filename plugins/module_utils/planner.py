# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Inventory -> plan: every host's services, computed once for the whole inventory.

Input is a plain mapping (no Ansible objects)::

    {"groups": {"router": [...], "prefill": [...], ...},
     "hostvars": {"host": {"k3_profile": ..., "ansible_host": ..., ...}}}

Output is the plan (see ``README.md``, "Reading a plan"). Problems are
collected, not raised one at a time: :func:`build_plan` raises
:class:`PlanError` carrying every problem, each naming the host, the variable
and the fix, before anything is returned.
"""

from __future__ import annotations

import ipaddress
import shlex

from . import formulas
from .formulas import PlanValueError
from .profiles import (
    ProfileError,
    Renderer,
    argv_flags,
    list_profiles,
    load_profile,
    merge,
    merge_args,
    merge_env,
    render_args,
    render_env,
)
from .units import shell_lines

ROLE_GROUPS = ("router", "metaservice", "prefill", "decode", "engine")
# Per-host variables every profile reads.
HOST_VARIABLES = (
    "k3_profile",
    "k3_ip",
    "k3_nic",
    "k3_rdma_devices",
    "k3_node_rank",
    "k3_devices_per_node",
    "k3_host_memory_bytes",
    "k3_vllm_args",
    "k3_router_args",
    "k3_proxy_args",
    "k3_env",
)
# Variables of the collection's playbooks and of the host-prerequisite roles (not profile settings).
RESERVED_PREFIXES = (
    "k3_plan_",
    "k3_sandbox_",
    "k3_nvidia_",
    "k3_rocm_",
    "k3_ascend_",
    "k3_container_",
    "k3_model_weights_",
    # Facts the collection's modules return (ansible_facts.k3_accelerator is also a host variable).
    "k3_accelerator",
)
PLAN_VERSION = 1


class Problem:
    """One reason a plan cannot be made."""

    def __init__(self, host, variable, message, fix):
        self.host = host or "all"
        self.variable = variable
        self.message = message
        self.fix = fix

    def __str__(self):
        return "host %s: %s: %s. Fix: %s" % (self.host, self.variable, self.message, self.fix)

    def as_dict(self):
        return {"host": self.host, "variable": self.variable, "message": self.message, "fix": self.fix}


class PlanError(Exception):
    """Every problem found in an inventory."""

    def __init__(self, problems):
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


# Functions the profile templates may call (the same ones the filter plugins expose).
TEMPLATE_FUNCTIONS = {
    "prefill_max_num_seqs_formula": formulas.prefill_max_num_seqs,
    "decode_max_num_seqs_formula": formulas.decode_max_num_seqs,
    "decode_graph_max": formulas.decode_graph_max,
    "cudagraph_capture_sizes": formulas.cudagraph_capture_sizes,
    "explicit_capture_sizes": lambda sizes: formulas.explicit_capture_sizes(sizes)[0],
    "decode_context_parallel": formulas.decode_context_parallel,
    "prefix": lambda value, text: "%s%s" % (text, value),
}


def _var(name):
    return "k3_" + name


def _coerce(value, default):
    """Inventory values may arrive as strings (INI); follow the default's type."""
    if isinstance(default, bool) and isinstance(value, str):
        if value.lower() in ("true", "yes", "1", "on"):
            return True
        if value.lower() in ("false", "no", "0", "off"):
            return False
    if isinstance(default, int) and not isinstance(default, bool) and isinstance(value, str):
        try:
            return int(value, 10)
        except ValueError:
            return value
    return value


class _Planner:
    def __init__(self, inventory, profile_dir=None):
        self.groups = {g: list(h or []) for g, h in (inventory.get("groups") or {}).items()}
        self.hostvars = inventory.get("hostvars") or {}
        self.profile_dir = profile_dir
        self.problems = []
        self.renderer = Renderer(TEMPLATE_FUNCTIONS)

    # ------------------------------------------------------------------ helpers
    def problem(self, host, variable, message, fix):
        self.problems.append(Problem(host, variable, message, fix))

    def hv(self, host, name, default=None):
        return self.hostvars.get(host, {}).get(name, default)

    def deployment_hosts(self):
        seen = []
        for group in ROLE_GROUPS:
            for host in self.groups.get(group, []):
                if host not in seen:
                    seen.append(host)
        return seen

    # ------------------------------------------------------------------ profile
    def select_profile(self, hosts):
        names = {}
        for host in hosts:
            name = self.hv(host, "k3_profile")
            names.setdefault(name, []).append(host)
        known = list_profiles(self.profile_dir)
        if not hosts:
            self.problem(
                "all",
                "groups",
                "the inventory has no host in any of the groups %s" % ", ".join(ROLE_GROUPS),
                "put the hosts into the groups their role needs (see the profile's example inventory)",
            )
            return None
        if len(names) > 1:
            detail = "; ".join("%s on %s" % (n, ", ".join(h)) for n, h in names.items())
            self.problem(
                "all",
                "k3_profile",
                "hosts of one deployment select different profiles (%s)" % detail,
                "set k3_profile once, in all.vars",
            )
            return None
        name = next(iter(names))
        if not name:
            self.problem(
                hosts[0], "k3_profile", "no profile selected", "set k3_profile to one of: %s" % ", ".join(known)
            )
            return None
        if name not in known:
            self.problem(hosts[0], "k3_profile", "unknown profile %r" % name, "use one of: %s" % ", ".join(known))
            return None
        try:
            return load_profile(name, self.profile_dir)
        except ProfileError as exc:
            self.problem(hosts[0], "k3_profile", str(exc), "repair the profile data file")
            return None

    # ------------------------------------------------------------------ parameters
    def parameters(self, defaults, hosts, scope):
        """Resolve parameters: profile default, overridden by k3_<name>; one value across ``hosts``."""
        out = {}
        for name, default in (defaults or {}).items():
            values = {}
            for host in hosts:
                raw = self.hv(host, _var(name), default)
                value = _coerce(raw, default)
                values.setdefault(repr(value), (value, []))[1].append(host)
            if len(values) > 1:
                detail = "; ".join("%r on %s" % (v, ", ".join(h)) for v, h in values.values())
                self.problem(
                    hosts[0],
                    _var(name),
                    "must be the same on every host of the %s, got %s" % (scope, detail),
                    "set %s once for the %s (all.vars or the group's vars)" % (_var(name), scope),
                )
            out[name] = next(iter(values.values()))[0] if values else default
        return out

    # ------------------------------------------------------------------ hosts
    def host_address(self, host, role_label):
        ip = self.hv(host, "k3_ip") or self.hv(host, "ansible_host") or host
        ip = str(ip)
        try:
            addr = ipaddress.ip_address(ip)
        except ValueError:
            addr = None
        variable = "k3_ip" if self.hv(host, "k3_ip") else "ansible_host"
        if addr is not None and addr.is_unspecified:
            self.problem(
                host,
                variable,
                "the %s address is %s, which no other node can reach" % (role_label, ip),
                "set k3_ip to the address other nodes use to reach %s" % host,
            )
        elif addr is not None and addr.is_loopback and len(self.deployment_hosts()) > 1:
            self.problem(
                host,
                variable,
                "the %s address %s is a loopback address in a multi-host deployment" % (role_label, ip),
                "set k3_ip to the address other nodes use to reach %s" % host,
            )
        return ip

    def ordered(self, group):
        hosts = list(self.groups.get(group, []))
        ranks = {h: self.hv(h, "k3_node_rank") for h in hosts}
        given = {h: r for h, r in ranks.items() if r is not None}
        if not given:
            return hosts
        ok = True
        by_rank = {}
        for host, rank in given.items():
            try:
                rank = int(rank)
            except (TypeError, ValueError):
                self.problem(
                    host,
                    "k3_node_rank",
                    "%r is not a whole number" % (rank,),
                    "set k3_node_rank to 0..%d" % (len(hosts) - 1),
                )
                ok = False
                continue
            by_rank.setdefault(rank, []).append(host)
        for rank, owners in sorted(by_rank.items()):
            if len(owners) > 1:
                self.problem(
                    owners[1],
                    "k3_node_rank",
                    "rank %d of group %s is also held by %s" % (rank, group, owners[0]),
                    "give every host of %s a unique k3_node_rank from 0 to %d" % (group, len(hosts) - 1),
                )
                ok = False
            if rank < 0 or rank >= len(hosts):
                self.problem(
                    owners[0],
                    "k3_node_rank",
                    "rank %d is outside 0..%d for the %d hosts of %s" % (rank, len(hosts) - 1, len(hosts), group),
                    "give every host of %s a unique k3_node_rank from 0 to %d" % (group, len(hosts) - 1),
                )
                ok = False
        missing = [h for h in hosts if ranks[h] is None]
        if missing:
            taken = sorted(by_rank)
            free = [r for r in range(len(hosts)) if r not in taken]
            self.problem(
                missing[0],
                "k3_node_rank",
                "some hosts of %s set k3_node_rank and %s does not" % (group, ", ".join(missing)),
                "set k3_node_rank on every host of %s (free ranks: %s) or on none" % (group, ", ".join(map(str, free))),
            )
            ok = False
        if not ok:
            return hosts
        return [by_rank[r][0] for r in sorted(by_rank)]

    # ------------------------------------------------------------------ main
    def build(self):
        hosts = self.deployment_hosts()
        profile = self.select_profile(hosts)
        if profile is None:
            raise PlanError(self.problems)
        self.profile = profile
        params = self.parameters(profile.get("parameters"), hosts, "deployment")
        params["profile"] = profile["name"]
        defaults = profile.get("service_defaults") or {}
        services_spec = {}
        for sname, spec in (profile.get("services") or {}).items():
            if spec is None:  # a profile that extends another removes a service with `name: null`
                continue
            kind = spec.get("kind", "vllm")
            services_spec[sname] = merge(defaults.get(kind) or {}, spec or {})
        self.services_spec = services_spec

        # Layout: which host runs which service instance, before any rendering.
        layouts = {}
        for sname, spec in services_spec.items():
            layouts[sname] = self.layout(sname, spec, params)
        self.check_unknown_variables(hosts)
        self.check_topology(params, layouts)
        if self.problems:
            raise PlanError(self.problems)
        pools = {
            sname: [
                {
                    "host": inst["host"],
                    "ip": inst["ip"],
                    "port": inst["vars"].get("http_port"),
                    "serves_http": inst["vars"].get("serves_http", True),
                    "name": inst["name"],
                    "dp_rank": inst["vars"].get("dp_rank"),
                    "url": "http://%s:%s" % (inst["ip"], inst["vars"].get("http_port")),
                }
                for inst in insts
            ]
            for sname, insts in layouts.items()
        }
        plan_hosts = {}
        rendered = []
        for sname, spec in services_spec.items():
            for inst in layouts[sname]:
                service = self.render_service(sname, spec, inst, params, pools)
                if service is None:
                    continue
                rendered.append((inst["host"], service))
                plan_hosts.setdefault(inst["host"], {"ip": inst["ip"], "services": []})["services"].append(service)
        if self.problems:
            raise PlanError(self.problems)
        self.check_rules(params, rendered)
        if self.problems:
            raise PlanError(self.problems)
        ordered_hosts = {h: plan_hosts[h] for h in hosts if h in plan_hosts}
        kinds = {"%s/%s" % (h, svc["name"]): svc["kind"] for h, svc in rendered}
        for _host, svc in rendered:
            # Front services that wait for engines start after them (static P/D endpoints, the proxy).
            svc["needs_engines"] = any(kinds.get(dep) == "vllm" for dep in svc["after"])
        index = {
            "%s/%s" % (host, svc["name"]): {
                "host": host,
                "name": svc["name"],
                "kind": svc["kind"],
                "role": svc["role"],
                "unit": svc["unit"],
                "health": svc["health"],
            }
            for host, data in ordered_hosts.items()
            for svc in data["services"]
        }
        verify = self.verify_checks(params, rendered)
        return {
            "version": PLAN_VERSION,
            "profile": profile["name"],
            "title": profile.get("title", profile["name"]),
            "platform": profile.get("platform"),
            "parameters": {k: v for k, v in params.items() if k != "profile"},
            "endpoint": self.endpoint(pools, services_spec),
            "hosts": ordered_hosts,
            "index": index,
            "verify": verify,
        }

    def verify_checks(self, params, rendered):
        """What verification checks for this deployment (profile data + the rendered services)."""
        spec = self.profile.get("verify") or {}
        out = {"served_model_name": params.get("served_model_name"), "vision": bool(spec.get("vision"))}
        pins = []
        for host, svc in rendered:
            ranks = svc.get("ranks") or {}
            if (
                svc["role"] in (spec.get("dp_rank_header") or [])
                and svc["url"]
                and int(ranks.get("dp_size", 1)) > 1
                and int(ranks.get("node_rank", 0)) == 0
            ):
                pins.append(
                    {
                        "service": "%s/%s" % (host, svc["name"]),
                        "url": svc["url"],
                        "ranks": list(range(int(ranks["dp_size"]))),
                    }
                )
        out["dp_pinning"] = pins
        kv = spec.get("kv_transfer")
        if kv:
            out["kv_transfer"] = dict(kv)
            for role in ("prefill", "decode"):
                out["kv_transfer"][role] = [s["url"] for _h, s in rendered if s["role"] == role and s["url"]]
        return out

    def endpoint(self, pools, services_spec):
        """Where clients send requests: the front service, or the first HTTP-serving engine."""
        for sname, spec in services_spec.items():
            if spec.get("kind") in ("router", "proxy") and pools.get(sname):
                first = pools[sname][0]
                return {"service": sname, "host": first["host"], "url": "http://%s:%s" % (first["ip"], first["port"])}
        for sname, spec in services_spec.items():
            for inst in pools.get(sname, []):
                if spec.get("kind") == "vllm" and inst["serves_http"]:
                    return {
                        "service": inst["name"],
                        "host": inst["host"],
                        "url": "http://%s:%s" % (inst["ip"], inst["port"]),
                    }
        return None

    # ------------------------------------------------------------------ layout
    def layout(self, sname, spec, params):
        group = spec.get("group", sname)
        hosts = self.ordered(group)
        need = spec.get("hosts") or {}
        label = spec.get("label", sname)
        lo, hi = need.get("min", 1), need.get("max")
        exact = need.get("count")
        if isinstance(exact, str):
            exact = self.renderer.value(exact, dict(params), "%s.hosts.count" % sname)
        if len(hosts) < lo or (hi is not None and len(hosts) > hi) or (exact is not None and len(hosts) != exact):
            want = (
                "exactly %d" % exact
                if exact is not None
                else ("at least %d" % lo if hi is None else ("%d" % lo if lo == hi else "%d to %d" % (lo, hi)))
            )
            self.problem(
                "all",
                "groups.%s" % group,
                "profile %s needs %s host(s) in group %s for its %s, the inventory has %d"
                % (params["profile"], want, group, label, len(hosts)),
                "put %s host(s) into group %s" % (want, group),
            )
            return []
        role_params = self.parameters(spec.get("parameters"), hosts, "%s group" % group) if hosts else {}
        parallel = spec.get("parallelism", "single")
        insts = []
        base = dict(params)
        base.update(role_params)
        if parallel == "single":
            for index, host in enumerate(hosts):
                insts.append(
                    self.instance(sname, spec, host, base, {"index": index, "is_node0": True, "serves_http": True})
                )
        elif parallel == "multinode":
            node0 = None
            for rank, host in enumerate(hosts):
                inst = self.instance(
                    sname,
                    spec,
                    host,
                    base,
                    {
                        "node_rank": rank,
                        "nnodes": len(hosts),
                        "is_node0": rank == 0,
                        "headless": rank > 0,
                        "serves_http": rank == 0,
                    },
                )
                node0 = node0 or inst["ip"]
                inst["vars"]["master_addr"] = node0
                insts.append(inst)
        elif parallel == "dp":
            ips = [self.host_address(h, label) for h in hosts]
            try:
                layout = formulas.data_parallel_layout(ips, base.get("dp_size_local", 1), base["dp_rpc_port"])
            except PlanValueError as exc:
                self.problem(hosts[0], _var("dp_size_local"), str(exc), "fix the data-parallel settings of %s" % group)
                return []
            hybrid = bool(base.get("dp_hybrid_lb"))
            for host, entry in zip(hosts, layout, strict=True):
                extra = dict(entry)
                extra.pop("node", None)
                extra.update(
                    {
                        "node_rank": entry["node_index"],
                        "nnodes": len(hosts),
                        "headless": not entry["is_node0"] and not hybrid,
                        "serves_http": entry["is_node0"] or hybrid,
                    }
                )
                insts.append(self.instance(sname, spec, host, base, extra))
        elif parallel == "dp_external":
            dp_size = len(hosts) * int(base.get("dp_size_local", 1))
            address = self.host_address(hosts[0], label)
            for index, host in enumerate(hosts):
                try:
                    ranks = formulas.external_dp_ranks(
                        base["vllm_start_port"],
                        dp_size,
                        index * int(base.get("dp_size_local", 1)),
                        base.get("dp_size_local", 1),
                        base["tensor_parallel_size"],
                    )
                except PlanValueError as exc:
                    self.problem(host, _var("dp_size_local"), str(exc), "fix the data-parallel settings of %s" % group)
                    continue
                for entry in ranks:
                    extra = {
                        "node_rank": index,
                        "nnodes": len(hosts),
                        "is_node0": index == 0,
                        "serves_http": True,
                        "dp_size": dp_size,
                        "dp_rank": entry["dp_rank"],
                        "dp_address": address,
                        "dp_rpc_port": base["dp_rpc_port"],
                        "http_port": entry["port"],
                        "local_rank": entry["local_rank"],
                        "devices": ",".join(str(d) for d in entry["devices"]),
                    }
                    suffix = "-dp%d" % entry["dp_rank"] if int(base.get("dp_size_local", 1)) > 1 else ""
                    insts.append(self.instance(sname, spec, host, base, extra, name=sname + suffix))
        else:
            self.problem(
                "all",
                "k3_profile",
                "profile %s: unknown parallelism %r for %s" % (params["profile"], parallel, sname),
                "use single, multinode, dp or dp_external in the profile data",
            )
        return insts

    def instance(self, sname, spec, host, base, extra, name=None):
        label = spec.get("label", sname)
        ctx = dict(base)
        ctx.update(extra)
        if spec.get("http_port") is not None and "http_port" not in extra:
            ctx["http_port"] = self.renderer.value(spec["http_port"], ctx, "%s.http_port" % sname)
        ctx.setdefault("http_port", base.get("http_port"))
        ctx.update(
            {
                "host": host,
                "ip": self.host_address(host, label),
                "nic": self.hv(host, "k3_nic"),
                "rdma_devices": self.hv(host, "k3_rdma_devices"),
                "service_name": name or sname,
            }
        )
        return {"service": sname, "name": name or sname, "host": host, "ip": ctx["ip"], "vars": ctx}

    # ------------------------------------------------------------------ unknown variables
    def check_unknown_variables(self, hosts):
        """A k3_* variable the profile does not read is a typo or a setting of another profile."""
        known = set(HOST_VARIABLES)
        known.update(_var(k) for k in (self.profile.get("parameters") or {}))
        for spec in self.services_spec.values():
            known.update(_var(k) for k in (spec.get("parameters") or {}))
        for host in hosts:
            for key in sorted(self.hostvars.get(host, {})):
                if not key.startswith("k3_") or key in known or key.startswith(RESERVED_PREFIXES):
                    continue
                self.problem(
                    host,
                    key,
                    "profile %s has no setting %s" % (self.profile["name"], key),
                    "remove it, or use one of: %s" % ", ".join(sorted(k for k in known if k not in HOST_VARIABLES)),
                )

    # ------------------------------------------------------------------ topology checks
    def check_topology(self, params, layouts):
        for sname, spec in self.services_spec.items():
            if spec.get("kind", "vllm") != "vllm":
                continue
            for inst in layouts.get(sname, []):
                ctx = inst["vars"]
                host = inst["host"]
                tp = ctx.get("tensor_parallel_size", 1)
                pp = ctx.get("pipeline_parallel_size", 1) or 1
                per_node = ctx.get("devices_per_node")
                devices = self.hv(host, "k3_devices_per_node", per_node)
                local_dp = ctx.get("dp_size_local", 1) if spec.get("parallelism") in ("dp", "dp_external") else 1
                nnodes = ctx.get("nnodes", 1) if spec.get("parallelism") == "multinode" else 1
                need = int(tp) * int(pp) * int(local_dp) // int(nnodes)
                if devices is not None and need > int(devices):
                    self.problem(
                        host,
                        "k3_devices_per_node",
                        "%s needs %d devices per node (TP %s x PP %s x local DP %s over %s node(s)) and the host has %s"
                        % (inst["name"], need, tp, pp, local_dp, nnodes, devices),
                        "use hosts with %d devices, or lower k3_tensor_parallel_size" % need,
                    )
                dcp = ctx.get("dcp_size", 1) or 1
                self.guarded(
                    host,
                    "k3_dcp_size",
                    "set k3_dcp_size to a divisor of k3_tensor_parallel_size",
                    formulas.decode_context_parallel,
                    tp,
                    dcp,
                    self.profile.get("dcp_platform", "none"),
                )
                if ctx.get("attention_heads"):
                    self.guarded(
                        host,
                        "k3_tensor_parallel_size",
                        "pick a tensor-parallel size that divides k3_attention_heads",
                        formulas.check_divides_heads,
                        tp,
                        ctx["attention_heads"],
                    )
                offload, memory = ctx.get("cpu_offload_bytes"), self.host_memory(host)
                if offload and memory:
                    self.guarded(
                        host,
                        "k3_cpu_offload_bytes",
                        "lower k3_cpu_offload_bytes, or set it to 0 to turn offload off",
                        formulas.check_cpu_offload,
                        offload,
                        memory,
                    )

    def guarded(self, host, variable, fix, func, *args):
        """Run a formula; a value it refuses becomes a problem naming the host and the variable."""
        try:
            return func(*args)
        except PlanValueError as exc:
            self.problem(host, variable, str(exc), fix)
            return None

    def host_memory(self, host):
        explicit = self.hv(host, "k3_host_memory_bytes")
        if explicit:
            return int(explicit)
        mb = self.hv(host, "ansible_memtotal_mb")
        return int(mb) * 1024 * 1024 if mb else None

    # ------------------------------------------------------------------ render
    def render_service(self, sname, spec, inst, params, pools):
        host = inst["host"]
        where = "profile %s, service %s on %s" % (params["profile"], inst["name"], host)
        ctx = dict(inst["vars"])
        ctx["pools"] = pools
        try:
            for key, value in (spec.get("vars") or {}).items():
                ctx[key] = self.renderer.value(value, ctx, "%s, vars.%s" % (where, key))
            kind = spec.get("kind", "vllm")
            command = self.renderer.value(spec.get("command") or [], ctx, where + ", command")
            args = merge_args(spec.get("args") or [])
            env = merge_env(spec.get("env") or {})
            if kind == "vllm":
                args = merge_args(args, self.hv(host, "k3_vllm_args") or [])
            elif kind in ("router", "proxy"):
                args = merge_args(args, self.hv(host, "k3_%s_args" % kind) or [])
            env = merge_env(env, self.hv(host, "k3_env") or {})
            rendered_args = [(flag, self.renderer.value(value, ctx, "%s, %s" % (where, flag))) for flag, value in args]
            argv = [str(c) for c in command] + render_args(rendered_args)
            env = render_env(self.renderer.value(env, ctx, where + ", env"))
            ports = []
            for port in spec.get("ports") or []:
                port = self.renderer.value(port, ctx, where + ", ports")
                if port.get("port") in (None, "", 0):
                    continue
                ports.append({"name": port["name"], "port": int(port["port"]), "count": int(port.get("count", 1))})
            after = []
            for dep in spec.get("after") or []:
                for other in pools.get(dep, []):
                    if dep == sname and other["host"] == host:
                        continue
                    after.append("%s/%s" % (other["host"], other["name"]))
            # Node 0 of a multi-node engine waits for its followers to join before it is healthy:
            # followers start once node 0 has started, not once it is healthy.
            after_started = []
            if spec.get("after_node0") and not ctx.get("is_node0", True):
                node0 = pools[sname][0]
                after_started.append("%s/%s" % (node0["host"], node0["name"]))
            container = self.renderer.value(spec.get("container") or {}, ctx, where + ", container")
            shell = self.renderer.value(spec.get("shell") or {}, ctx, where + ", shell")
            files = self.renderer.value(spec.get("files") or [], ctx, where + ", files")
            health = self.renderer.value(spec.get("health"), ctx, where + ", health") if spec.get("health") else None
        except (ProfileError, PlanValueError) as exc:
            self.problem(host, "k3_profile", str(exc), "check the values the profile reads (k3_* variables)")
            return None
        ranks = {
            k: ctx[k]
            for k in (
                "node_rank",
                "nnodes",
                "dp_size",
                "dp_size_local",
                "dp_start_rank",
                "dp_rank",
                "dp_address",
                "devices",
            )
            if k in ctx and ctx[k] is not None
        }
        image = self.renderer.value(spec.get("image"), ctx, where + ", image") if spec.get("image") else None
        runtime = self.hv(host, "k3_runtime") or ("docker" if image else "host")
        if runtime not in ("docker", "host") or (runtime == "docker" and not image):
            self.problem(
                host,
                "k3_runtime",
                "%s cannot run with runtime %r%s"
                % (inst["name"], runtime, "" if image else " (the profile gives it no image)"),
                "set k3_runtime to host (a vLLM installed on the host) or docker (the planned image)",
            )
        service = {
            "name": inst["name"],
            "kind": kind,
            "role": spec.get("role", sname),
            "argv": argv,
            "env": env,
            "image": image,
            "runtime": runtime,
            "ports": ports,
            "after": after,
            "after_started": after_started,
            "unit": "k3-%s" % inst["name"],
            "ranks": ranks,
            "serves_http": bool(ctx.get("serves_http", True)),
            "url": "http://%s:%s" % (ctx["ip"], ctx["http_port"])
            if ctx.get("serves_http", True) and ctx.get("http_port")
            else None,
            "health": health if ctx.get("serves_http", True) else None,
            "container": container,
        }
        if shell:
            service["shell"] = {k: v for k, v in shell.items() if v}
        if files:
            service["files"] = files
        return service

    # ------------------------------------------------------------------ rules after rendering
    def check_rules(self, params, rendered):
        entries = []
        for host, svc in rendered:
            for port in svc["ports"]:
                entries.append((host, svc["name"], port["name"], port["port"], port["count"]))
        for host, port, users in formulas.port_collisions(entries):
            self.problem(
                host,
                "k3_*_port",
                "port %d is used by %s" % (port, " and ".join(users)),
                "give one of them another port (the profile's *_port parameters) or move it to another host",
            )
        for host, svc in rendered:
            env = svc["env"]
            if env.get("AITER_SITUV2_A8W4") == "1" and env.get("VLLM_ROCM_USE_AITER_MOE_SITUV2") != "1":
                self.problem(
                    host,
                    "k3_env.AITER_SITUV2_A8W4",
                    "%s sets AITER_SITUV2_A8W4=1 without VLLM_ROCM_USE_AITER_MOE_SITUV2=1: vLLM does not derive "
                    "its MoE weight layout from that AITER flag, and the two can disagree and corrupt output "
                    "without an error" % svc["name"],
                    "remove AITER_SITUV2_A8W4, or set VLLM_ROCM_USE_AITER_MOE_SITUV2=1 (the a4w4 path)",
                )
            for name, value in (self.profile.get("forbid_env") or {}).items():
                if env.get(name) == str(value):
                    self.problem(
                        host,
                        "k3_env.%s" % name,
                        "%s sets %s=%s, which the %s baseline must not set"
                        % (svc["name"], name, value, params["profile"]),
                        "remove %s from k3_env" % name,
                    )
            moe = argv_flags(svc["argv"]).get("moe-backend")
            if moe == "deep_gemm_mega_moe" and params.get("fabric") == "rdma":
                self.problem(
                    host,
                    "k3_fabric",
                    "%s uses --moe-backend deep_gemm_mega_moe, which is not compatible with cross-node RDMA"
                    % svc["name"],
                    "use cross-node NVLink (k3_fabric: nvlink) or drop the MegaMoE backend via k3_vllm_args",
                )
        self.check_pd_match(rendered)

    def check_pd_match(self, rendered):
        """Prefill and decode must agree on SSM dtype, DCP settings and cache layout."""
        keys_args = (
            "mamba-ssm-cache-dtype",
            "decode-context-parallel-size",
            "dcp-comm-backend",
            "cp-kv-cache-interleave-size",
            "kv-cache-dtype",
            "block-size",
        )
        keys_env = ("VLLM_SSM_CONV_STATE_LAYOUT", "VLLM_KV_CACHE_LAYOUT")
        seen = {}
        for host, svc in rendered:
            if svc["kind"] != "vllm" or svc["role"] not in ("prefill", "decode"):
                continue
            flags = argv_flags(svc["argv"])
            for key in keys_args:
                seen.setdefault("--" + key, []).append((host, svc["name"], flags.get(key, "(default)")))
            for key in keys_env:
                seen.setdefault(key, []).append((host, svc["name"], svc["env"].get(key, "(unset)")))
        for key, values in seen.items():
            distinct = sorted({v for _, _, v in values})
            if len(distinct) > 1:
                first = values[0]
                odd = next(v for v in values if v[2] != first[2])
                self.problem(
                    odd[0],
                    "k3_vllm_args" if key.startswith("--") else "k3_env.%s" % key,
                    "%s is %s on %s/%s but %s on %s/%s: prefill and decode must keep SSM dtype, DCP settings and cache "
                    "layout matched" % (key, odd[2], odd[0], odd[1], first[2], first[0], first[1]),
                    "set %s to the same value on every prefill and decode host" % key,
                )


def build_plan(inventory, profile_dir=None):
    """Plan a whole inventory. Raises :class:`PlanError` listing every problem."""
    return _Planner(inventory, profile_dir).build()


# --------------------------------------------------------------------------
# Readable artefacts beside plan.json
# --------------------------------------------------------------------------
def launch_script(plan, host, service):
    """A readable shell script: environment, then exec of the exact argv."""
    lines = [
        "#!/usr/bin/env bash",
        "# kimi_k3.serving plan: profile %s, host %s, service %s (%s)"
        % (plan["profile"], host, service["name"], service["kind"]),
    ]
    if service.get("image"):
        lines.append("# image: %s" % service["image"])
    if service.get("after"):
        lines.append("# start once healthy: %s" % ", ".join(service["after"]))
    if service.get("after_started"):
        lines.append("# start once started: %s" % ", ".join(service["after_started"]))
    lines.append("set -euo pipefail")
    lines.extend(
        shell_lines((service.get("shell") or {}) and {k: v for k, v in service["shell"].items() if k != "prepend"})
    )
    for key, value in service["env"].items():
        lines.append("export %s=%s" % (key, shlex.quote(value)))
    lines.extend(shell_lines({"prepend": (service.get("shell") or {}).get("prepend") or {}}))
    lines.append("exec " + " \\\n    ".join(_argv_lines(service["argv"])))
    return "\n".join(lines) + "\n"


def _argv_lines(argv):
    """One line per flag with its value(s); the program and its positionals on the first."""
    out = []
    for token in argv:
        quoted = shlex.quote(token)
        if out and not token.startswith("-"):
            out[-1] += " " + quoted
        else:
            out.append(quoted)
    return out


def summary_table(plan):
    """A fixed-width table: host, service, role, ranks, ports."""
    rows = [("HOST", "SERVICE", "KIND", "ROLE", "RANKS", "PORTS", "AFTER")]
    for host, data in plan["hosts"].items():
        for svc in data["services"]:
            ranks = svc.get("ranks") or {}
            rank_txt = ",".join(
                "%s=%s" % (k, v) for k, v in ranks.items() if k in ("node_rank", "dp_rank", "dp_start_rank", "dp_size")
            )
            ports = ",".join(
                "%s:%d" % (p["name"], p["port"])
                if p["count"] == 1
                else "%s:%d-%d" % (p["name"], p["port"], p["port"] + p["count"] - 1)
                for p in svc["ports"]
            )
            rows.append(
                (
                    host,
                    svc["name"],
                    svc["kind"],
                    svc["role"],
                    rank_txt or "-",
                    ports or "-",
                    ",".join(svc["after"] + ["%s(started)" % a for a in svc.get("after_started", [])]) or "-",
                )
            )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    text = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]
    head = [
        "profile: %s (%s)" % (plan["profile"], plan.get("title", "")),
        "endpoint: %s" % ((plan.get("endpoint") or {}).get("url", "-")),
        "",
    ]
    return "\n".join(head + text) + "\n"


def plan_files(plan):
    """Every file the plan playbook writes, relative to the plan directory."""
    import json

    files = {"plan.json": json.dumps(plan, indent=2, sort_keys=False) + "\n", "summary.txt": summary_table(plan)}
    for host, data in plan["hosts"].items():
        for svc in data["services"]:
            files["scripts/%s/%s.sh" % (host, svc["name"])] = launch_script(plan, host, svc)
    return files
