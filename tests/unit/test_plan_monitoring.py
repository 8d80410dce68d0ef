"""The plan's monitoring section: the inventory's monitoring group and what it changes in the plan.

Planner tables, no hosts: with a monitoring host the router listens for Prometheus on its own
address (a planned port the firewall admits the monitoring host to), and the plan lists every
target; without one nothing changes but an empty section.
"""

from __future__ import annotations

import copy

import pytest
from test_plan_schema import SANDBOX_ADDRESSES, SANDBOX_GROUPS, sandbox_plan

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations import _firewall as firewall
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _plan_schema as plan_schema
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _planner as planner


def inventory(monitoring=None, profile="sandbox-cpu", **watcher_vars):
    groups = copy.deepcopy(SANDBOX_GROUPS[profile])
    hosts = {h for members in groups.values() for h in members}
    hostvars = {h: {"k3_profile": profile, "ansible_host": SANDBOX_ADDRESSES[h], "k3_nic": "eth0"} for h in hosts}
    if monitoring:
        groups["monitoring"] = list(monitoring)
        for host, address in monitoring.items():
            hostvars.setdefault(host, {}).update({"ansible_host": address}, **watcher_vars)
    return {"groups": groups, "hostvars": hostvars}


def router(plan):
    return next(s for s in plan["hosts"]["k3-sb-front"]["services"] if s["kind"] == "router")


def test_without_a_monitoring_host_the_plan_has_an_empty_section_and_the_router_its_own_argv():
    plan = planner.build_plan(inventory())
    assert plan["monitoring"] == {"hosts": [], "targets": [], "unreachable": []}
    assert "--prometheus-host" not in router(plan)["argv"]
    assert plan_schema.validate_plan(plan) == []


def test_a_monitoring_host_gets_the_router_listening_on_its_address_and_every_target():
    plan = planner.build_plan(inventory({"k3-sb-mon": "10.77.0.18"}))
    argv = router(plan)["argv"]
    assert argv[-4:] == ["--prometheus-host", "10.77.0.11", "--prometheus-port", "29000"]
    assert {"name": "metrics", "port": 29000, "count": 1} in router(plan)["ports"]
    assert plan["monitoring"]["hosts"] == [{"host": "k3-sb-mon", "ip": "10.77.0.18"}]
    assert sorted(t["address"] for t in plan["monitoring"]["targets"]) == [
        "10.77.0.11:29000",
        "10.77.0.11:8088",
        "10.77.0.11:9100",
        "10.77.0.12:8000",
        "10.77.0.12:9100",
        "10.77.0.13:9100",
        "10.77.0.14:8100",
        "10.77.0.14:9100",
        "10.77.0.15:8200",
        "10.77.0.15:9100",
    ]
    assert plan["monitoring"]["unreachable"] == []
    # The monitoring host runs nothing of the plan.
    assert "k3-sb-mon" not in plan["hosts"]
    assert plan_schema.validate_plan(plan) == []


def test_a_router_behind_the_api_key_launcher_still_gets_its_prometheus_listener():
    inv = inventory({"k3-sb-mon": "10.77.0.18"})
    for host in inv["hostvars"]:
        inv["hostvars"][host]["k3_api_key"] = "sk-test-monitoring-key-0123456789"
        inv["hostvars"][host]["k3_admin_api_key"] = "sk-test-monitoring-admin-0123456789"
    plan = planner.build_plan(inv)
    argv = router(plan)["argv"]
    # The launcher (vllm-router-auth.py) runs vllm-router with the key from the environment.
    assert argv[1].endswith("vllm-router-auth.py"), argv
    assert argv[-4:] == ["--prometheus-host", "10.77.0.11", "--prometheus-port", "29000"]
    assert plan["monitoring"]["unreachable"] == []
    assert "10.77.0.11:29000" in {t["address"] for t in plan["monitoring"]["targets"]}


def test_the_firewall_admits_the_monitoring_host_to_every_planned_port():
    plan = planner.build_plan(inventory({"k3-sb-mon": "10.77.0.18"}))
    rules = firewall.host_rules(plan, "k3-sb-front")
    assert "29000" in rules["ports"]
    assert "10.77.0.18" in rules["ruleset"]
    assert "10.77.0.18" not in firewall.host_rules(sandbox_plan("sandbox-cpu"), "k3-sb-front")["ruleset"]


def test_a_router_port_given_in_the_inventory_is_kept_and_planned():
    inv = inventory({"k3-sb-mon": "10.77.0.18"})
    inv["hostvars"]["k3-sb-front"]["k3_router_args"] = [{"--prometheus-port": 29500}]
    plan = planner.build_plan(inv)
    argv = router(plan)["argv"]
    assert argv.count("--prometheus-port") == 1 and argv[argv.index("--prometheus-port") + 1] == "29500"
    assert {"name": "metrics", "port": 29500, "count": 1} in router(plan)["ports"]
    assert [t["address"] for t in plan["monitoring"]["targets"] if t["job"] == "router"] == ["10.77.0.11:29500"]


def test_a_router_kept_on_the_loopback_is_named_as_unreachable():
    inv = inventory({"k3-sb-mon": "10.77.0.18"})
    inv["hostvars"]["k3-sb-front"]["k3_router_args"] = [{"--prometheus-host": "127.0.0.1"}]
    plan = planner.build_plan(inv)
    assert not any(p["name"] == "metrics" for p in router(plan)["ports"])
    assert plan["monitoring"]["unreachable"] == [
        "k3-sb-front/router: its metrics listen on 127.0.0.1 only (vllm-router's default): another host cannot "
        "scrape them. Fix: set k3_router_args: [{--prometheus-host: 10.77.0.11}] on it"
    ]


@pytest.mark.parametrize(
    ("address", "message"),
    [
        ("mon.example.com", "monitoring host k3-sb-mon has no IP address"),
        ("127.0.0.1", "monitoring host k3-sb-mon has the address 127.0.0.1, from which it cannot scrape"),
        ("0.0.0.0", "monitoring host k3-sb-mon has the address 0.0.0.0"),
    ],
)
def test_a_monitoring_host_without_a_usable_address_is_refused_naming_it(address, message):
    with pytest.raises(planner.PlanError) as err:
        planner.build_plan(inventory({"k3-sb-mon": address}))
    [problem] = err.value.problems
    assert (problem.host, problem.variable) == ("k3-sb-mon", "k3_ip")
    assert message in problem.message and "k3-sb-mon" in problem.fix


def test_a_monitoring_host_may_be_a_deployment_host():
    plan = planner.build_plan(inventory({"k3-sb-front": "10.77.0.11"}))
    assert plan["monitoring"]["hosts"] == [{"host": "k3-sb-front", "ip": "10.77.0.11"}]
    assert "--prometheus-host" in router(plan)["argv"]
