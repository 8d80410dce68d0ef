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


def rules_of(text):
    """The input chain's lines, stripped."""
    chain = text[text.index("  chain input {") :].splitlines()[1:]
    return [line.strip() for line in chain if line.startswith("    ")]


def test_default_deny_ssh_from_the_admins_only_and_what_keeps_ip_working():
    plan = plan_of("nvidia-pd-nixl")
    text = host_rules(plan, "gb300-p0", ["203.0.113.0/24"], ["192.0.2.250", "2001:db8::7"], {"ssh": [2222]})["ruleset"]
    lines = rules_of(text)
    assert "type filter hook input priority filter - 10; policy drop;" in lines
    assert lines[1:4] == ['iif "lo" accept', "ct state established,related accept", "ct state invalid drop"]
    assert any(line.startswith("icmpv6 type {") and "nd-neighbor-solicit" in line for line in lines)
    ssh = [line for line in lines if "dport { 2222 }" in line]
    assert ssh == [
        'tcp dport { 2222 } ip saddr @admins4 accept comment "ssh: the admin networks"',
        'tcp dport { 2222 } ip6 saddr @admins6 accept comment "ssh: the admin networks"',
        "tcp dport { 2222 } drop",
    ]
    assert "dport { 22 }" not in text and "policy accept" not in text and "flush" not in text
    # Nothing but the table's own rules decides: the last rule is not a catch-all accept.
    assert not lines[-1].endswith(" accept") or "dport" in lines[-1]


def test_each_planned_port_takes_the_hosts_the_plan_connects_then_the_operators():
    plan = plan_of("nvidia-pd-nixl")
    endpoint = plan["endpoint"]["host"]
    port = int(plan["endpoint"]["url"].rsplit(":", 1)[1])
    rules = host_rules(plan, endpoint, ["203.0.113.0/24", "2001:db8::/32"], ["192.0.2.250"])
    assert rules["endpoint_ports"] == [port]
    lines = rules_of(rules["ruleset"])
    assert 'tcp dport { %d } ip saddr @clients4 accept comment "clients"' % port in lines
    assert 'tcp dport { %d } ip6 saddr @clients6 accept comment "clients"' % port in lines
    # The prefill engine: its HTTP port from the router's host, its NIXL side channel from the two
    # decode hosts that pull the KV cache; anyone else is reset.
    lines = rules_of(host_rules(plan, "gb300-p0", [], ["192.0.2.250"])["ruleset"])
    assert 'tcp dport { 8001 } ip saddr { 192.0.2.50 } accept comment "the hosts the plan connects"' in lines
    assert (
        'tcp dport { 5557 } ip saddr { 192.0.2.71, 192.0.2.72 } accept comment "the hosts the plan connects"' in lines
    )
    assert 'tcp dport { 5557, 8001 } ip saddr @operators4 accept comment "monitoring and admins"' in lines
    assert lines.index("tcp dport { 5557, 8001 } reject with tcp reset") > lines.index(
        'tcp dport { 5557, 8001 } ip saddr @operators4 accept comment "monitoring and admins"'
    )
    assert '@deployment4 accept comment "the hosts' not in "\n".join(lines)


def test_the_members_of_a_multi_node_group_take_every_port_from_each_other_only():
    plan = plan_of("nvidia-pd-nixl")
    d0 = rules_of(host_rules(plan, "gb300-d0")["ruleset"])
    assert 'ip saddr { 192.0.2.72 } accept comment "the other members of its engine group"' in d0
    # After SSH's drop: a member is no admin.
    assert d0.index("tcp dport { 22 } drop") < d0.index(
        'ip saddr { 192.0.2.72 } accept comment "the other members of its engine group"'
    )
    assert 'tcp dport { 13345 } ip saddr { 192.0.2.72 } accept comment "the hosts the plan connects"' in d0
    # A single-host engine has no such rule.
    assert "engine group" not in host_rules(plan, "gb300-p0")["ruleset"]


def test_a_host_without_ports_still_gets_the_default_deny_table():
    plan = plan_of("a2-mixed-8node")
    followers = [h for h, d in plan["hosts"].items() if not any(s["ports"] for s in d["services"])]
    assert followers
    for host in followers:
        rules = host_rules(plan, host, [], ["192.0.2.250"])
        assert rules["ports"] == []
        assert "policy drop;" in rules["ruleset"] and "reject" not in rules["ruleset"]
        assert "the other members of its engine group" in rules["ruleset"]


def test_the_inventory_adds_its_own_rules_and_bad_ones_are_named():
    plan = plan_of("nvidia-tp8")
    host = next(iter(plan["hosts"]))
    allow = [
        {"ports": [10050], "from": ["192.0.2.0/24", "admins"], "comment": "the site's agent"},
        {"ports": ["60000-60010"], "proto": "udp", "from": ["deployment"]},
    ]
    lines = rules_of(host_rules(plan, host, [], ["192.0.2.250"], {}, allow)["ruleset"])
    assert 'tcp dport { 10050 } ip saddr @admins4 accept comment "the site\'s agent"' in lines
    assert 'tcp dport { 10050 } ip saddr { 192.0.2.0/24 } accept comment "the site\'s agent"' in lines
    assert 'udp dport { 60000-60010 } ip saddr @deployment4 accept comment "k3_firewall_allow"' in lines
    for bad, message in (
        ({"ports": [1]}, "ports and from are both needed"),
        ({"ports": [1], "from": ["10.0.0.300"]}, "k3_firewall_allow\\[0\\].from"),
        ({"ports": ["1-"], "from": ["admins"]}, "is not a port or a range"),
        ({"ports": [1], "from": ["admins"], "proto": "sctp"}, "proto 'sctp' is not tcp or udp"),
        ({"port": 1, "from": ["admins"]}, "is not {ports, proto, from}"),
    ):
        with pytest.raises(FirewallError, match=message):
            host_rules(plan, host, [], [], {}, [bad])


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
    rules = host_rules(plan, "mon-1", ["203.0.113.0/24"], ["192.0.2.250"], {"monitoring": [9090, 9093]})
    assert rules["ports"] == ["9090", "9093"] and rules["endpoint_ports"] == []
    text = rules["ruleset"]
    assert 'tcp dport { 9090, 9093 } ip saddr @operators4 accept comment "metrics: monitoring and admins"' in text
    assert "tcp dport { 9090, 9093 } reject with tcp reset" in text
    watchers = text[text.index("set operators4") : text.index("}", text.index("set operators4"))]
    assert all(ip in watchers for ip in ("192.0.2.9", "192.0.2.10", "192.0.2.250"))
    assert "@clients4 accept" not in text and "@deployment4 accept comment" not in text
    # The deployment's hosts keep their tables; the monitoring ports are the monitoring hosts' only.
    engine = next(iter(plan["hosts"]))
    assert host_rules(plan, engine, [], [], {"monitoring": [9090, 9093]})["ports"] == host_rules(plan, engine)["ports"]
    # Alertmanager's cluster port: from the other monitoring host only, the only rule it has.
    ports = {"monitoring": [9090, 9093], "gossip": [9094]}
    text = host_rules(plan, "mon-1", ["203.0.113.0/24"], ["192.0.2.250"], ports)["ruleset"]
    assert [line.strip() for line in text.splitlines() if "9094" in line] == [
        "tcp dport { 9094 } ip saddr { 192.0.2.10 } accept "
        'comment "Alertmanager\'s cluster: the other monitoring hosts"'
    ]
    assert "9094" not in host_rules(plan, engine, [], [], ports)["ruleset"]
    # One monitoring host: no cluster, the port is dropped as every unlisted one.
    plan["monitoring"]["hosts"].pop()
    assert "9094" not in host_rules(plan, "mon-1", [], ["192.0.2.250"], ports)["ruleset"]
    if shutil.which("nft"):
        path = tmp_path / "mon.nft"
        path.write_text(text)
        check = subprocess.run(["nft", "-c", "-f", str(path)], capture_output=True, text=True, check=False)
        assert check.returncode == 0 or "Operation not permitted" in check.stderr, check.stderr


def test_the_transfer_ports_take_the_deployment_only_over_tcp_and_udp(tmp_path):
    plan = plan_of("a2-mixed-8node")
    follower = next(h for h, d in plan["hosts"].items() if not any(s["ports"] for s in d["services"]))
    rules = host_rules(plan, follower, [], ["192.0.2.250"], {"transfers": [6969, "6881-6889"], "fabric": [5201]})
    assert rules["ports"] == ["6881-6889", "6969"]
    text = rules["ruleset"]
    for proto in ("tcp", "udp"):
        assert (
            '%s dport { 6881-6889, 6969 } ip saddr @deployment4 accept comment "transfers: the deployment"' % proto
            in text
        )
    assert 'tcp dport { 5201 } ip saddr @deployment4 accept comment "fabric check: the deployment"' in text
    assert (
        "tcp dport { 6881-6889, 6969 } reject with tcp reset" in text and "udp dport { 6881-6889, 6969 } reject" in text
    )
    # Not on a host outside the deployment (a monitoring host), and nothing but ports or ranges.
    plan["monitoring"] = {"hosts": [{"host": "mon-1", "ip": "192.0.2.9"}]}
    mon = host_rules(plan, "mon-1", [], [], {"monitoring": [9090], "transfers": [6969], "fabric": [5201]})
    assert mon["ports"] == ["9090"] and "5201" not in mon["ruleset"]
    for bad in ("6881-", "x", "7000-6000", 0, "65536"):
        with pytest.raises(FirewallError, match="firewall_transfer_ports"):
            host_rules(plan, follower, [], [], {"transfers": [bad]})
    if shutil.which("nft"):
        path = tmp_path / "follower.nft"
        path.write_text(text)
        check = subprocess.run(["nft", "-c", "-f", str(path)], capture_output=True, text=True, check=False)
        assert check.returncode == 0 or "Operation not permitted" in check.stderr, check.stderr
