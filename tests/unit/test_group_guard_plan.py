"""The group guards in the plan: beside each member of an engine group that spans hosts.

Planner tables, no hosts. Each follower on another host than its node 0 gets a guard watching its
connections to node 0's address; node 0 gets one watching every follower host; the guard's
program is the plan's file; a follower's unit restarts always (it exits 0 once its node 0 is gone).
"""

from __future__ import annotations

import copy

import pytest
from conftest import EXAMPLES, example_names, inventory_input
from test_plan_schema import sandbox_plan

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations import _firewall as firewall
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations import _unit_files as unit_files
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _plan_guards as guards
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _plan_schema as plan_schema
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _planner as planner


def guards_of(plan):
    return {(h, s["name"]): s for h, d in plan["hosts"].items() for s in d["services"] if s["kind"] == "guard"}


def argv_tail(svc):
    return svc["argv"][2:]


def test_the_sandbox_data_parallel_group_has_a_guard_on_each_host():
    plan = sandbox_plan("sandbox-cpu")
    found = guards_of(plan)
    assert set(found) == {("k3-sb-dp0", "engine-guard"), ("k3-sb-dp1", "engine-guard")}
    node0, follower = found[("k3-sb-dp0", "engine-guard")], found[("k3-sb-dp1", "engine-guard")]
    assert argv_tail(node0) == ["--unit", "k3-engine", "--role", "node0", "--peer", "10.77.0.13", "--grace", "30"]
    assert argv_tail(follower) == ["--unit", "k3-engine", "--role", "follower", "--peer", "10.77.0.12", "--grace", "30"]
    assert node0["argv"][:2] == ["/usr/bin/python3", "/etc/kimi-k3/k3_group_guard.py"]
    assert node0["files"][0]["content"] == guards.guard_source() and node0["health"] is None
    # No port: the firewall plans nothing for them.
    assert node0["ports"] == [] and "k3-sb-dp1" in plan["hosts"]
    # The prefill/decode pair spans hosts but is no group: no guard there.
    assert not [k for k in found if k[0] in ("k3-sb-prefill", "k3-sb-decode", "k3-sb-front")]
    assert plan_schema.validate_plan(plan) == []


@pytest.mark.parametrize("name", example_names())
def test_every_group_member_on_its_own_host_has_one_guard_naming_the_others(name):
    plan = planner.build_plan(copy.deepcopy(inventory_input(str(EXAMPLES / name / "hosts.yml"))))
    found = guards_of(plan)
    engines = {"%s/%s" % (h, s["name"]): (h, s) for h, d in plan["hosts"].items() for s in d["services"]}
    expected = {}
    for host, data in plan["hosts"].items():
        for svc in data["services"]:
            for key in svc.get("after_started") or []:
                node0_host, node0 = engines[key]
                if svc["kind"] == "vllm" and node0_host != host:
                    expected[(host, svc["name"] + "-guard")] = ["--peer", plan["hosts"][node0_host]["ip"]]
                    peers = expected.setdefault((node0_host, node0["name"] + "-guard"), [])
                    if plan["hosts"][host]["ip"] not in peers:
                        peers += ["--peer", plan["hosts"][host]["ip"]]
    assert set(found) == set(expected)
    for key, svc in found.items():
        argv = svc["argv"]
        peers = [argv[i + 1] for i, arg in enumerate(argv) if arg == "--peer"]
        assert sorted(peers) == sorted(expected[key][1::2]), key
    assert plan_schema.validate_plan(plan) == []


def test_group_guard_false_plans_none_and_the_grace_is_the_inventorys():
    inv = copy.deepcopy(inventory_input(str(EXAMPLES / "a3-mixed-4node" / "hosts.yml")))
    for host in inv["hostvars"]:
        inv["hostvars"][host]["k3_group_guard_grace"] = 45
    plan = planner.build_plan(inv)
    assert {s["argv"][-1] for s in guards_of(plan).values()} == {"45"}
    for host in inv["hostvars"]:
        inv["hostvars"][host]["k3_group_guard"] = False
    assert guards_of(planner.build_plan(inv)) == {}


def test_a_grace_below_five_seconds_is_refused_naming_the_variable():
    inv = copy.deepcopy(inventory_input(str(EXAMPLES / "nvidia-dep16" / "hosts.yml")))
    for host in inv["hostvars"]:
        inv["hostvars"][host]["k3_group_guard_grace"] = 1
    with pytest.raises(planner.PlanError, match="k3_group_guard_grace"):
        planner.build_plan(inv)


def test_followers_restart_always_and_node0_on_failure():
    plan = sandbox_plan("sandbox-cpu")
    node0 = next(s for s in plan["hosts"]["k3-sb-dp0"]["services"] if s["kind"] == "vllm")
    follower = next(s for s in plan["hosts"]["k3-sb-dp1"]["services"] if s["kind"] == "vllm")
    settings = {
        "config_dir": "/etc/kimi-k3",
        "state_dir": "/var/lib/kimi-k3",
        "path": [],
        "extra_env": {},
        "limits": {},
        "docker": "/usr/bin/docker",
    }
    assert "Restart=always\n" in unit_files.unit_text(follower, settings)
    assert "Restart=on-failure\n" in unit_files.unit_text(node0, settings)
    assert firewall.host_rules(plan, "k3-sb-dp1")["ports"] == []
