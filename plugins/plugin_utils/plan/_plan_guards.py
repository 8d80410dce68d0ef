# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The group guards in the plan: one per member of each engine group that spans hosts.

A follower engine (a service that waits for its node 0 to have started: ``after_started``) on
another host than its node 0 gets a guard on its host that watches its connections to node 0, and
that node 0 gets a guard on its own host that watches its connections from every follower host
(data/k3_group_guard.py says how they decide). Each guard is a service of kind ``guard`` (role
``guard``): a small program of the standard library under systemd, no port, no health URL, run
by the engine role with the engines. ``k3_group_guard: false`` plans none;
``k3_group_guard_grace`` is how long a lost connection is tolerated (30 s).
"""

from __future__ import annotations

import os

from ansible_collections.kimi_k3.serving.plugins.plugin_utils._paths import DATA_DIR
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._service_entry import service_entry

KIND = "guard"
PROGRAM = "k3_group_guard.py"
PYTHON = "/usr/bin/python3"
DEFAULT_GRACE = 30


def guard_source():
    with open(os.path.join(DATA_DIR, PROGRAM), encoding="utf-8") as handle:
        return handle.read()


def _guard(engine, role, peers, grace, config_dir, source):
    name = "%s-guard" % engine["name"]
    path = "%s/%s" % (config_dir, PROGRAM)
    argv = [PYTHON, path, "--unit", engine["unit"], "--role", role]
    for peer in peers:
        argv += ["--peer", peer]
    argv += ["--grace", str(grace)]
    return service_entry(name, KIND, argv, files=[{"path": path, "mode": "0644", "content": source}])


class GuardsMixin:
    def add_guards(self, hosts, rendered, plan_hosts, config_dir):
        """A guard beside every member of each engine group whose followers are on other hosts."""
        if not self.deployment_value(hosts, "k3_group_guard", True):
            return
        grace = int(self.deployment_value(hosts, "k3_group_guard_grace", DEFAULT_GRACE))
        engines = {"%s/%s" % (h, s["name"]): (h, s) for h, s in rendered if s["kind"] == "vllm"}
        groups = {}
        for host, svc in rendered:
            if svc["kind"] != "vllm":
                continue
            for key in svc.get("after_started") or []:
                if key in engines and engines[key][0] != host:
                    groups.setdefault(key, []).append((host, svc))
        source = guard_source() if groups else None
        for key, followers in groups.items():
            node0_host, node0 = engines[key]
            node0_ip = plan_hosts[node0_host]["ip"]
            for host, svc in followers:
                guard = _guard(svc, "follower", [node0_ip], grace, config_dir, source)
                rendered.append((host, guard))
                plan_hosts[host]["services"].append(guard)
            peers = sorted({plan_hosts[h]["ip"] for h, _svc in followers})
            guard = _guard(node0, "node0", peers, grace, config_dir, source)
            rendered.append((node0_host, guard))
            plan_hosts[node0_host]["services"].append(guard)
