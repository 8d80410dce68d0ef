# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Rendering: each service instance's argv, environment, ports, order and health."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._formulas import PlanValueError
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._profiles import (
    MissingVariable,
    ProfileError,
    merge_args,
    merge_env,
    render_args,
    render_env,
)

MISSING_FIXES = {
    "k3_nic": "set k3_nic on %s to the interface that owns its k3_ip (the NIC of the cluster network)",
    "k3_rdma_devices": "set k3_rdma_devices on %s to its RDMA HCAs (ibv_devices lists them), e.g. [mlx5_0, mlx5_1]",
}


class RenderMixin:
    """One planned service per layout instance, and what verification checks."""

    def missing_variable(self, host, service, variable):
        self.problem(
            host,
            variable,
            "%s is not set and %s needs it (profile %s)" % (variable, service, self.profile["name"]),
            MISSING_FIXES.get(variable, "set %s on %%s" % variable) % host,
        )

    def source_variable(self, host, names):
        """The k3_* variable a refused value was computed from: one the operator set, else the first."""
        declared = ["k3_" + n for n in names if self.contract.parameter(n) is not None]
        for name in declared:
            if name in self.hostvars.get(host, {}):
                return name
        return declared[0] if declared else "k3_profile"

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
                return {
                    "service": sname,
                    "host": first["host"],
                    "url": "http://%s:%s" % (first["ip"], first["port"]),
                    "port": int(first["port"]),
                }
        for sname, spec in services_spec.items():
            for inst in pools.get(sname, []):
                if spec.get("kind") == "vllm" and inst["serves_http"]:
                    return {
                        "service": inst["name"],
                        "host": inst["host"],
                        "url": "http://%s:%s" % (inst["ip"], inst["port"]),
                        "port": int(inst["port"]),
                    }
        return None

    def render_service(self, sname, spec, inst, params, pools):
        host = inst["host"]
        where = "profile %s, service %s on %s" % (params["profile"], inst["name"], host)
        ctx = dict(inst["vars"])
        ctx["pools"] = pools
        try:
            parts = self._render_parts(sname, spec, inst, pools, ctx, where)
        except MissingVariable as exc:
            self.missing_variable(host, inst["name"], str(exc))
            return None
        except PlanValueError as exc:
            variable = self.source_variable(host, getattr(exc, "names", []))
            self.problem(host, variable, "%s: %s" % (inst["name"], exc), "change %s" % variable)
            return None
        except ProfileError as exc:
            self.problem(host, "k3_profile", str(exc), "check the values the profile reads (k3_* variables)")
            return None
        except (TypeError, ValueError) as exc:  # a computed value of the wrong kind, e.g. a port
            self.problem(
                host,
                "k3_profile",
                "%s: a value computed from the k3_* variables is unusable (%s)" % (where, exc),
                "check the k3_* variables this service reads",
            )
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
            "kind": parts["kind"],
            "role": spec.get("role", sname),
            "argv": parts["argv"],
            "env": parts["env"],
            "image": image,
            "runtime": runtime,
            "ports": parts["ports"],
            "after": parts["after"],
            "after_started": parts["after_started"],
            "unit": "k3-%s" % inst["name"],
            "ranks": ranks,
            "serves_http": bool(ctx.get("serves_http", True)),
            "url": "http://%s:%s" % (ctx["ip"], ctx["http_port"])
            if ctx.get("serves_http", True) and ctx.get("http_port")
            else None,
            "health": parts["health"] if ctx.get("serves_http", True) else None,
            "container": parts["container"],
        }
        if parts["shell"]:
            service["shell"] = {k: v for k, v in parts["shell"].items() if v}
        if parts["files"]:
            service["files"] = parts["files"]
        if parts["writes"]:
            service["writes"] = [str(w) for w in parts["writes"]]
        if parts["caches"] and runtime == "docker":
            service["caches"] = [{"path": str(path), "key": image} for path in parts["caches"]]
        return service

    def _render_parts(self, sname, spec, inst, pools, ctx, where):
        """The profile's templates of one service instance, rendered (raises what rendering raises)."""
        host = inst["host"]
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
        parts = {
            "kind": kind,
            "argv": [str(c) for c in command] + render_args(rendered_args),
            "env": render_env(self.renderer.value(env, ctx, where + ", env")),
            "ports": self._render_ports(spec, inst, ctx, where),
            "after": [
                "%s/%s" % (other["host"], other["name"])
                for dep in spec.get("after") or []
                for other in pools.get(dep, [])
                if not (dep == sname and other["host"] == host)
            ],
            # Node 0 of a multi-node engine waits for its followers to join before it is healthy:
            # followers start once node 0 has started, not once it is healthy.
            "after_started": [],
        }
        if spec.get("after_node0") and not ctx.get("is_node0", True):
            node0 = pools[sname][0]
            parts["after_started"].append("%s/%s" % (node0["host"], node0["name"]))
        parts["container"] = self.renderer.value(spec.get("container") or {}, ctx, where + ", container")
        parts["shell"] = self.renderer.value(spec.get("shell") or {}, ctx, where + ", shell")
        parts["files"] = self.renderer.value(spec.get("files") or [], ctx, where + ", files")
        parts["writes"] = self.renderer.value(spec.get("writes") or [], ctx, where + ", writes")
        parts["caches"] = self.renderer.value(spec.get("caches") or [], ctx, where + ", caches")
        parts["health"] = (
            self.renderer.value(spec.get("health"), ctx, where + ", health") if spec.get("health") else None
        )
        return parts

    def _render_ports(self, spec, inst, ctx, where):
        """The service's ports; each port's source parameters are kept to name them if it collides."""
        ports = []
        for raw in spec.get("ports") or []:
            port = self.renderer.value(raw, ctx, where + ", ports")
            if port.get("port") in (None, "", 0):
                continue
            ports.append({"name": port["name"], "port": int(port["port"]), "count": int(port.get("count", 1))})
            names = self.renderer.names(raw.get("port"))
            if "http_port" in names and spec.get("http_port") is not None:  # the service's own HTTP port
                names = [n for n in names if n != "http_port"] + self.renderer.names(spec["http_port"])
            self.port_sources[(inst["host"], inst["name"], port["name"])] = [
                "k3_" + n for n in names if self.contract.parameter(n) is not None
            ]
        return ports
