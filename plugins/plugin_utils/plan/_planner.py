# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Inventory -> plan: every host's services, computed once for the whole inventory.

Input is a plain mapping (no Ansible objects)::

    {"groups": {"router": [...], "prefill": [...], ...},
     "hostvars": {"host": {"k3_profile": ..., "ansible_host": ..., ...}}}

Output is the plan (see ``README.md``, "Reading a plan", and ``data/plan-v1.schema.json``).
Problems are collected, not raised one at a time: :func:`build_plan` raises
:class:`PlanError` carrying every problem, each naming the host, the variable and the
fix, before anything is returned. The work is split by job:

* :mod:`.plan_inputs`: the inventory's shape, the profile, the variable contract, addresses;
* :mod:`.plan_layout`: services onto hosts (ranks, ports, node order);
* :mod:`.plan_render`: each service's argv, env, order, health; verification checks;
* :mod:`.plan_checks`: devices, formulas, port collisions, profile rules, P/D match;
* :mod:`.plan_output`: launch scripts and the summary table.
"""

from __future__ import annotations

import traceback

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _formulas as formulas
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._plan_auth import AuthMixin
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._plan_checks import ChecksMixin
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._plan_front_door import FrontDoorMixin
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._plan_guards import GuardsMixin
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._plan_inputs import (
    FACT_VARIABLES,
    ROLE_GROUPS,
    InputsMixin,
)
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._plan_layout import LayoutMixin
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._plan_model import PlanError, Problem
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._plan_monitoring import MonitoringMixin
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._plan_output import (
    launch_script,
    plan_files,
    summary_table,
)
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._plan_render import RenderMixin
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._profiles import Renderer, merge, with_variant
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._variables import load_contract

__all__ = [
    "FACT_VARIABLES",
    "PLAN_VERSION",
    "ROLE_GROUPS",
    "PlanError",
    "Problem",
    "build_plan",
    "launch_script",
    "plan_files",
    "summary_table",
]

PLAN_VERSION = 1

TEMPLATE_FUNCTIONS = {
    "prefill_max_num_seqs_formula": formulas.prefill_max_num_seqs,
    "decode_max_num_seqs_formula": formulas.decode_max_num_seqs,
    "decode_graph_max": formulas.decode_graph_max,
    "cudagraph_capture_sizes": formulas.cudagraph_capture_sizes,
    "explicit_capture_sizes": lambda sizes: formulas.explicit_capture_sizes(sizes)[0],
    "decode_context_parallel": formulas.decode_context_parallel,
    "prefix": lambda value, text: "%s%s" % (text, value),
}


# One renderer for every plan: it keeps the profiles' compiled templates.
RENDERER = Renderer(TEMPLATE_FUNCTIONS)


class _Planner(
    InputsMixin, LayoutMixin, RenderMixin, ChecksMixin, AuthMixin, FrontDoorMixin, MonitoringMixin, GuardsMixin
):
    def __init__(self, inventory, profile_dir=None):
        self.profile_dir = profile_dir
        self.problems = []
        self.renderer = RENDERER
        self.contract = load_contract()
        self.profile = None
        self.services_spec = {}
        self.reported = set()
        self.port_sources = {}
        self.read_inventory(inventory)

    def problem(self, host, variable, message, fix):
        if (host, variable) in self.reported:
            return  # its value was refused already; what follows from the default is not news
        self.problems.append(Problem(host, variable, message, fix))

    def error(self):
        """Every problem; one that reads the same on every host of the deployment is said once, for all."""
        hosts = self.deployment_hosts()
        same = {}
        for p in self.problems:
            same.setdefault((p.variable, p.message, p.fix), []).append(p.host)
        out, said = [], set()
        for p in self.problems:
            key = (p.variable, p.message, p.fix)
            if len(hosts) > 1 and sorted(same[key]) == sorted(hosts):
                if key not in said:
                    said.add(key)
                    out.append(Problem("all", p.variable, p.message, p.fix + " (every host has it: all.vars)"))
                continue
            out.append(p)
        return PlanError(out)

    def hv(self, host, name, default=None):
        return self.hostvars.get(host, {}).get(name, default)

    def deployment_hosts(self):
        seen = []
        for group in ROLE_GROUPS:
            for host in self.groups.get(group, []):
                if host not in seen:
                    seen.append(host)
        return seen

    def build(self):
        if self.problems:
            raise self.error()
        hosts = self.deployment_hosts()
        profile = self.select_profile(hosts)
        if profile is None:
            raise self.error()
        self.profile = profile
        services_spec = self.services_spec = _services_spec(profile)
        # The front door: every k3_* variable declared, read by this profile and well typed;
        # every address an address. A refused value is dropped, so nothing below runs on it.
        self.check_variables(hosts, services_spec)
        self.check_addresses(hosts)
        # A variant (k3_variant) is data beside its profile: other parameter defaults, nothing else.
        variant = self.select_variant(hosts)
        if variant is not None:
            profile = self.profile = with_variant(profile, variant)
        params = self.parameters(profile.get("parameters"), hosts, "deployment")
        params["profile"] = profile["name"]

        # Layout: which host runs which service instance, before any rendering.
        layouts = {sname: self.layout(sname, spec, params) for sname, spec in services_spec.items()}
        self.check_topology(params, layouts)
        if self.problems:
            raise self.error()
        pools = _pools(layouts)
        rendered, plan_hosts = self.render_all(services_spec, layouts, params, pools)
        if self.problems:
            raise self.error()
        # Beside each member of an engine group that spans hosts: the guard that heals the group.
        self.add_guards(hosts, rendered, plan_hosts, params.get("config_dir") or "/etc/kimi-k3")
        endpoint, auth, auth_tls, watchers = self.secure(hosts, params, pools, rendered, plan_hosts)
        ordered_hosts = {h: plan_hosts[h] for h in hosts if h in plan_hosts}
        _mark_needs_engines(rendered)
        plan = {
            "version": PLAN_VERSION,
            "profile": profile["name"],
            "variant": variant,
            "title": _title(profile, variant),
            "platform": profile.get("platform"),
            "parameters": {k: v for k, v in params.items() if k != "profile"},
            "endpoint": endpoint,
            "auth": auth,
            "tls": auth_tls,
            "hosts": ordered_hosts,
            "index": _index(ordered_hosts),
            "verify": self.verify_checks(params, rendered),
        }
        plan["monitoring"] = self.monitoring_section(plan, watchers)
        return plan

    def render_all(self, services_spec, layouts, params, pools):
        """``([(host, service)], {host: {ip, services}})`` of every instance the profile renders."""
        plan_hosts = {}
        rendered = []
        for sname, spec in services_spec.items():
            for inst in layouts[sname]:
                service = self.render_service(sname, spec, inst, params, pools)
                if service is None:
                    continue
                rendered.append((inst["host"], service))
                plan_hosts.setdefault(inst["host"], {"ip": inst["ip"], "services": []})["services"].append(service)
        return rendered, plan_hosts

    def secure(self, hosts, params, pools, rendered, plan_hosts):
        """The keys, TLS and the front door: ``(endpoint, auth, tls, monitoring hosts)``."""
        keys = self.read_auth(hosts)
        tls = self.read_tls(hosts)
        front = self.read_front_door(hosts)
        admin = self.read_admin_key(hosts, front, keys)
        config_dir = params.get("config_dir") or "/etc/kimi-k3"
        endpoint = self.endpoint(pools, self.services_spec)
        if front is not None and endpoint is not None:
            front["state_dir"] = "%s/%s" % (params.get("state_dir") or "/var/lib/kimi-k3", "front-door")
            # Before the port checks: the front door's port must not collide with the host's others.
            endpoint = self.add_front_door(front, rendered, plan_hosts, endpoint, tls, config_dir)
        watchers = self.monitoring_hosts()
        if watchers:
            # Before the port checks: an exporter's port must not collide with the host's others.
            self.add_exporters(hosts, rendered, plan_hosts, config_dir)
        self.check_rules(params, rendered)
        if self.problems:
            raise self.error()
        # Before the key's launcher takes the router's argv[0] (vllm-router) over.
        if watchers:
            self.expose_router_metrics(rendered, plan_hosts)
        sealed = front is not None and endpoint is not None
        auth = self.apply_auth(keys, admin, rendered, params, sealed)
        auth["limits"] = self.apply_limits(hosts, rendered, params)
        self.apply_plain_ids(rendered)
        if sealed:
            auth_tls = self.configure_front_door(front, rendered, auth, tls, config_dir, params)
        else:
            auth_tls = self.apply_tls(tls, rendered)
            endpoint = _https_endpoint(endpoint, auth_tls)
        return endpoint, auth, auth_tls, watchers


def _services_spec(profile):
    """The profile's services, each merged over the defaults of its kind."""
    defaults = profile.get("service_defaults") or {}
    services_spec = {}
    for sname, spec in (profile.get("services") or {}).items():
        if spec is None:  # a profile that extends another removes a service with `name: null`
            continue
        kind = spec.get("kind", "vllm")
        services_spec[sname] = merge(defaults.get(kind) or {}, spec or {})
    return services_spec


def _pools(layouts):
    """{service: [each instance's host, address, port, name, DP rank and URL]}."""
    return {
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


def _mark_needs_engines(rendered):
    """Front services that wait for engines start after them (static P/D endpoints, the proxy)."""
    kinds = {"%s/%s" % (h, svc["name"]): svc["kind"] for h, svc in rendered}
    for _host, svc in rendered:
        svc["needs_engines"] = any(kinds.get(dep) == "vllm" for dep in svc["after"])


def _index(ordered_hosts):
    return {
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


def _title(profile, variant):
    title = profile.get("title", profile["name"])
    if variant is None:
        return title
    return "%s; %s" % (title, profile["variants"][variant]["title"])


def _https_endpoint(endpoint, tls):
    if endpoint and "%s/%s" % (endpoint["host"], endpoint["service"]) in tls["services"]:
        endpoint = dict(endpoint, url="https://" + endpoint["url"].split("://", 1)[1])
    return endpoint


def build_plan(inventory, profile_dir=None):
    """Plan a whole inventory. Raises :class:`PlanError` listing every problem, and nothing else."""
    try:
        return _Planner(inventory, profile_dir).build()
    except PlanError:
        raise
    except Exception as exc:  # the planner never crashes on an inventory: report it as a problem
        where = traceback.extract_tb(exc.__traceback__)[-1]
        raise PlanError(
            [
                Problem(
                    "all",
                    "inventory",
                    "the planner could not read this inventory (%s: %s at %s:%d)"
                    % (type(exc).__name__, exc, where.filename.rsplit("/", 1)[-1], where.lineno),
                    "check the values of the k3_* variables against the variable reference (docs/variables.md), "
                    "and report this inventory as a bug of the collection",
                )
            ]
        ) from exc
