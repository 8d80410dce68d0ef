"""The firewall table of each host, from real plans: which ports, open to whom. The sandbox test loads it."""

from __future__ import annotations

import copy
import shutil
import subprocess

import pytest
from conftest import EXAMPLES, inventory_input

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations._firewall import (
    FirewallError,
    host_rules,
    networks,
)
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._planner import PlanError, build_plan


def plan_of(name, **extra):
    inv = copy.deepcopy(inventory_input(str(EXAMPLES / name / "hosts.yml")))
    for data in inv["hostvars"].values():
        data.update(copy.deepcopy(extra))
    return build_plan(inv)


def test_pd_router_host_opens_its_port_to_clients_and_the_deployment():
    plan = plan_of("nvidia-pd-nixl")
    host = plan["endpoint"]["host"]
    rules = host_rules(plan, host, ["203.0.113.0/24", "2001:db8::/32"], ["192.0.2.250"])
    port = int(plan["endpoint"]["url"].rsplit(":", 1)[1])
    assert rules["endpoint_ports"] == [port]
    text = rules["ruleset"]
    assert "tcp dport { %d } ip saddr @clients4 accept" % port in text
    assert "tcp dport { %d } ip6 saddr @clients6 accept" % port in text
    assert "203.0.113.0/24" in text and "2001:db8::/32" in text and "192.0.2.250" in text
    for data in plan["hosts"].values():
        assert data["ip"] in text
    assert text.index("saddr @clients4 accept") < text.index("reject with tcp reset")
    assert "policy accept;" in text and "flush" not in text and "dport 22" not in text


def test_engine_hosts_open_every_planned_port_only_to_the_deployment():
    plan = plan_of("nvidia-pd-nixl")
    engine = next(h for h, d in plan["hosts"].items() if any(s["kind"] == "vllm" for s in d["services"]))
    rules = host_rules(plan, engine, ["203.0.113.0/24"], [])
    assert rules["endpoint_ports"] == []
    assert "@clients4" not in rules["ruleset"]
    expected = set()
    for svc in plan["hosts"][engine]["services"]:
        for p in svc["ports"]:
            expected.add(str(p["port"]) if p["count"] == 1 else "%d-%d" % (p["port"], p["port"] + p["count"] - 1))
    assert set(rules["ports"]) == expected and expected
    assert "tcp dport { %s } reject with tcp reset" % ", ".join(rules["ports"]) in rules["ruleset"]


def test_a_port_range_is_one_element():
    plan = plan_of("a3-pd-8p8d")
    ranges = {p for h in plan["hosts"] for p in host_rules(plan, h)["ports"] if "-" in p}
    assert ranges  # the kv ports of each TP rank


def test_a_host_without_ports_gets_no_table():
    plan = plan_of("a2-mixed-8node")
    followers = [h for h, d in plan["hosts"].items() if not any(s["ports"] for s in d["services"])]
    for host in followers:
        assert host_rules(plan, host)["ports"] == []
        assert "reject" not in host_rules(plan, host)["ruleset"]


@pytest.mark.skipif(shutil.which("nft") is None, reason="nft is missing (nftables)")
def test_every_example_table_is_valid_nft(tmp_path):
    for example in sorted(p.name for p in EXAMPLES.iterdir()):
        plan = plan_of(example)
        for host in plan["hosts"]:
            text = host_rules(plan, host, ["203.0.113.0/24"], ["192.0.2.250/32"])["ruleset"]
            path = tmp_path / ("%s-%s.nft" % (example, host))
            path.write_text(text)
            check = subprocess.run(["nft", "-c", "-f", str(path)], capture_output=True, text=True, check=False)
            if "Operation not permitted" in check.stderr:
                pytest.skip("nft -c needs CAP_NET_ADMIN here")
            assert check.returncode == 0, (example, host, check.stderr)


def test_bad_networks_are_refused_by_the_planner_naming_the_variable():
    with pytest.raises(PlanError) as exc:
        plan_of("nvidia-tp8", k3_client_networks=["10.0.0.0/8", "clients.example.com"])
    text = "\n".join(str(p) for p in exc.value.problems)
    assert "k3_client_networks: item 'clients.example.com' is not an address or a network" in text
    assert "set k3_client_networks to a list of addresses or networks" in text
    with pytest.raises(PlanError) as exc:
        plan_of("nvidia-tp8", k3_admin_networks="10.0.0.0/8")
    assert "k3_admin_networks: '10.0.0.0/8' is not a list" in "\n".join(str(p) for p in exc.value.problems)
    with pytest.raises(FirewallError):
        networks(["300.1.2.3"], "k3_client_networks")


def test_firewall_off_is_a_declared_switch():
    plan_of("nvidia-tp8", k3_firewall=False)
    with pytest.raises(PlanError) as exc:
        plan_of("nvidia-tp8", k3_firewall="maybe")
    assert "k3_firewall" in "\n".join(str(p) for p in exc.value.problems)


def test_a_monitoring_host_opens_prometheus_and_alertmanager_to_the_watchers_and_admins_only(tmp_path):
    plan = plan_of("nvidia-pd-nixl")
    plan["monitoring"] = {"hosts": [{"host": "mon-1", "ip": "192.0.2.9"}, {"host": "mon-2", "ip": "192.0.2.10"}]}
    rules = host_rules(plan, "mon-1", ["203.0.113.0/24"], ["192.0.2.250"], [9090, 9093])
    assert rules["ports"] == ["9090", "9093"] and rules["endpoint_ports"] == []
    text = rules["ruleset"]
    assert "tcp dport { 9090, 9093 } ip saddr @monitoring4 accept" in text
    assert "tcp dport { 9090, 9093 } reject with tcp reset" in text
    watchers = text[text.index("set monitoring4") : text.index("}", text.index("set monitoring4"))]
    assert all(ip in watchers for ip in ("192.0.2.9", "192.0.2.10", "192.0.2.250"))
    assert "@clients4" not in text and "@deployment4 accept" not in text
    # The deployment's hosts keep their tables; the monitoring ports are the monitoring hosts' only.
    engine = next(iter(plan["hosts"]))
    assert host_rules(plan, engine, [], [], [9090, 9093])["ports"] == host_rules(plan, engine)["ports"]
    if shutil.which("nft"):
        path = tmp_path / "mon.nft"
        path.write_text(text)
        check = subprocess.run(["nft", "-c", "-f", str(path)], capture_output=True, text=True, check=False)
        assert check.returncode == 0 or "Operation not permitted" in check.stderr, check.stderr


def test_the_transfer_ports_take_the_deployment_only_over_tcp_and_udp(tmp_path):
    plan = plan_of("a2-mixed-8node")
    follower = next(h for h, d in plan["hosts"].items() if not any(s["ports"] for s in d["services"]))
    rules = host_rules(plan, follower, [], ["192.0.2.250"], [], [6969, "6881-6889"])
    assert rules["ports"] == ["6881-6889", "6969"]
    text = rules["ruleset"]
    for proto in ("tcp", "udp"):
        assert "%s dport { 6881-6889, 6969 } ip saddr @deployment4 accept" % proto in text
    assert (
        "tcp dport { 6881-6889, 6969 } reject with tcp reset" in text and "udp dport { 6881-6889, 6969 } reject" in text
    )
    # Not on a host outside the deployment (a monitoring host), and nothing but ports or ranges.
    plan["monitoring"] = {"hosts": [{"host": "mon-1", "ip": "192.0.2.9"}]}
    assert host_rules(plan, "mon-1", [], [], [9090], [6969])["ports"] == ["9090"]
    for bad in ("6881-", "x", "7000-6000", 0, "65536"):
        with pytest.raises(FirewallError, match="firewall_transfer_ports"):
            host_rules(plan, follower, [], [], [], [bad])
    if shutil.which("nft"):
        path = tmp_path / "follower.nft"
        path.write_text(text)
        check = subprocess.run(["nft", "-c", "-f", str(path)], capture_output=True, text=True, check=False)
        assert check.returncode == 0 or "Operation not permitted" in check.stderr, check.stderr
