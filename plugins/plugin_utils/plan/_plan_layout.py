# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Layout: which host runs which service instance, with its ranks, ports and addresses."""

from __future__ import annotations

import ipaddress

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _formulas as formulas
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._formulas import PlanValueError
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._plan_model import coerce, var_name
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._profiles import missing


class LayoutMixin:
    """Services onto hosts, before anything is rendered."""

    def parameters(self, defaults, hosts, scope):
        """Resolve parameters: profile default, overridden by k3_<name>; one value across ``hosts``."""
        out = {}
        for name, default in (defaults or {}).items():
            values = {}
            for host in hosts:
                raw = self.hv(host, var_name(name), default)
                value = coerce(raw, default)
                values.setdefault(repr(value), (value, []))[1].append(host)
            if len(values) > 1:
                detail = "; ".join("%r on %s" % (v, ", ".join(h)) for v, h in values.values())
                self.problem(
                    hosts[0],
                    var_name(name),
                    "must be the same on every host of the %s, got %s" % (scope, detail),
                    "set %s once for the %s (all.vars or the group's vars)" % (var_name(name), scope),
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
                self.problem(
                    hosts[0], var_name("dp_size_local"), str(exc), "fix the data-parallel settings of %s" % group
                )
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
                    self.problem(
                        host, var_name("dp_size_local"), str(exc), "fix the data-parallel settings of %s" % group
                    )
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
                # Unset: a profile value that needs one names the variable instead of losing it.
                "nic": self.hv(host, "k3_nic") or missing("k3_nic", host),
                "rdma_devices": self.hv(host, "k3_rdma_devices") or missing("k3_rdma_devices", host),
                "service_name": name or sname,
            }
        )
        return {"service": sname, "name": name or sname, "host": host, "ip": ctx["ip"], "vars": ctx}
