# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Checks on a laid-out and a rendered deployment: devices, formulas, ports, rules, P/D match."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _formulas as formulas
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._formulas import PlanValueError
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._profiles import argv_flags


class ChecksMixin:
    """Rules the planner applies once the layout and the services are known."""

    def check_topology(self, params, layouts):
        self.check_engine_hosts(layouts)
        for sname, spec in self.services_spec.items():
            if spec.get("kind", "vllm") != "vllm":
                continue
            # The offload budget is in host memory of the engines whose templates read it.
            offloads = "cpu_offload_bytes" in self.renderer.names(spec)
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
                if offload and memory and offloads:
                    self.guarded(
                        host,
                        "k3_cpu_offload_bytes",
                        "lower k3_cpu_offload_bytes, or set it to 0 to turn offload off",
                        formulas.check_cpu_offload,
                        offload,
                        memory,
                    )

    def check_engine_hosts(self, layouts):
        """One engine group per host: every engine takes all of its node's accelerators.

        A deployment of one host (the planner's single-machine mode, loopback allowed) is the
        exception: there the devices are the operator's to split (k3_vllm_args, k3_env).
        """
        if len(self.deployment_hosts()) < 2:
            return
        groups = {}
        for sname, spec in self.services_spec.items():
            if spec.get("kind", "vllm") != "vllm":
                continue
            group = spec.get("group", sname)
            for inst in layouts.get(sname, []):
                held = groups.setdefault(inst["host"], [])
                if group not in held:
                    held.append(group)
        for host, held in groups.items():
            if len(held) > 1:
                self.problem(
                    host,
                    "groups.%s" % held[1],
                    "%s is in groups %s: each engine of profile %s takes every accelerator of its host, so "
                    "two engines cannot share one" % (host, " and ".join(held), self.profile["name"]),
                    "keep %s in one of groups %s and give the other its own host" % (host, ", ".join(held)),
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

    def check_rules(self, params, rendered):
        entries = []
        for host, svc in rendered:
            for port in svc["ports"]:
                entries.append((host, svc["name"], port["name"], port["port"], port["count"]))
        for host, name, port_name, first, count in entries:
            if first + count - 1 > 65535:
                sources = self.port_sources.get((host, name, port_name)) or ["k3_profile"]
                self.problem(
                    host,
                    " or ".join(sources),
                    "%s/%s needs ports %d-%d, beyond 65535" % (name, port_name, first, first + count - 1),
                    "set %s to at most %d" % (" or ".join(sources), 65536 - count),
                )
        for host, port, users in formulas.port_collisions(entries):
            sources = []
            for user in users:
                name, _unused, port_name = user.rpartition("/")
                for variable in self.port_sources.get((host, name, port_name), []):
                    if variable not in sources:
                        sources.append(variable)
            self.problem(
                host,
                " or ".join(sources) if sources else "k3_profile",
                "port %d is used by %s" % (port, " and ".join(users)),
                "give one of them another port (%s) or move it to another host"
                % (" or ".join(sources) if sources else "the profile's port parameters"),
            )
        for host, svc in rendered:
            env = svc["env"]
            for name, value in (self.profile.get("forbid_env") or {}).items():
                if env.get(name) == str(value):
                    self.problem(
                        host,
                        "k3_env.%s" % name,
                        "%s sets %s=%s, which the %s baseline must not set"
                        % (svc["name"], name, value, params["profile"]),
                        "remove %s from k3_env" % name,
                    )
            for rule in self.profile.get("rules") or []:
                if (
                    svc["kind"] == "vllm"
                    and _holds(rule["when"], svc, params)
                    and not (rule.get("unless") and _holds(rule["unless"], svc, params))
                ):
                    self.problem(host, rule["variable"], "%s %s" % (svc["name"], rule["message"]), rule["fix"])
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
            distinct = sorted({v for _unused, _unused, v in values})
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


def _holds(condition, svc, params):
    """Every condition of a profile rule holds for the rendered service."""
    flags = argv_flags(svc["argv"])
    checks = [(svc["env"].get(k), v) for k, v in (condition.get("env") or {}).items()]
    checks += [(flags.get(k), v) for k, v in (condition.get("args") or {}).items()]
    checks += [(params.get(k), v) for k, v in (condition.get("parameters") or {}).items()]
    return all(actual is not None and str(actual) == str(wanted) for actual, wanted in checks)
