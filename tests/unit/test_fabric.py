"""Fabric acceptance (plugins/plugin_utils/operations/_fabric.py, module_utils/fabric_iperf.py): the
pairs every example plan connects, the rounds, iperf3's recorded outputs, the report's sentences."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from conftest import example_names, example_plan
from test_plan_schema import sandbox_plan

from ansible_collections.kimi_k3.serving.plugins.module_utils import fabric_iperf
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations import _fabric as fabric

FIXTURES = Path(__file__).parent / "fixtures" / "fabric"
SETTINGS = {
    "fabric_port": 5201,
    "fabric_tcp_seconds": 3,
    "fabric_tcp_streams": 4,
    "fabric_tcp_min_gbps": 5,
    # The TCP floor alone here (tests/unit/test_fabric_tools.py: the vendor tools).
    "fabric_vendor_tools": False,
}


def names(plan, hosts=None):
    return [p["name"] for p in fabric.pairs(plan, hosts)]


def test_a_two_node_data_parallel_group_is_measured_both_ways():
    found = fabric.pairs(example_plan("nvidia-dep16"))
    assert [(p["src"], p["dst"], p["client"], p["reverse"]) for p in found] == [
        ("gb300-n0", "gb300-n1", "gb300-n0", False),
        ("gb300-n1", "gb300-n0", "gb300-n1", False),
    ]
    assert found[0]["why"] == ["engine group gb300-n0/engine (2 hosts)"]
    assert found[0]["server_ip"] == example_plan("nvidia-dep16")["hosts"]["gb300-n1"]["ip"]


def test_an_eight_node_group_is_a_ring():
    found = names(example_plan("a2-mixed-8node"))
    assert found == ["a2-n%d -> a2-n%d" % (i, (i + 1) % 8) for i in range(8)]


def test_kv_paths_flow_from_prefill_to_decode_measured_from_the_decode_host():
    found = [p for p in fabric.pairs(example_plan("mi355x-pd-1p2d-c24")) if p["reverse"]]
    assert [(p["src"], p["dst"], p["client"], p["server"]) for p in found] == [
        ("mi355x-p1", "mi355x-d1", "mi355x-d1", "mi355x-p1"),
        ("mi355x-p1", "mi355x-d2", "mi355x-d2", "mi355x-p1"),
    ]
    assert found[0]["why"] == ["KV cache mi355x-p1/prefill -> mi355x-d1/decode"]


def test_8p8d_has_both_rings_and_every_prefill_to_decode_path():
    found = fabric.pairs(example_plan("a3-pd-8p8d"))
    rings = [p for p in found if not p["reverse"]]
    kv = [p for p in found if p["reverse"]]
    assert len(rings) == 16 and len(kv) == 64
    assert {(p["src"][-2:], p["dst"][-2:]) for p in kv} == {
        ("p%d" % a, "d%d" % b) for a, b in itertools.product(range(8), range(8))
    }


def test_a_single_node_deployment_has_nothing_to_measure():
    prepared = fabric.prepare(example_plan("nvidia-tp8"), SETTINGS)
    assert (prepared["pairs"], prepared["rounds"], prepared["hosts"]) == ([], [], [])


@pytest.mark.parametrize("name", example_names())
def test_no_host_is_in_two_pairs_of_a_round_and_every_pair_is_measured_once(name):
    prepared = fabric.prepare(example_plan(name), SETTINGS)
    measured = []
    for batch in prepared["rounds"]:
        servers = {p["server_ip"]: p["server"] for p in prepared["pairs"]}
        hosts = [client for client in batch] + [servers[item["server"]] for item in batch.values()]
        assert len(hosts) == len(set(hosts)), (name, batch)
        measured += [item["pair"] for item in batch.values()]
    assert sorted(measured) == sorted(p["name"] for p in prepared["pairs"])


def test_a_limit_keeps_the_pairs_inside_it():
    plan = example_plan("a2-mixed-8node")
    assert names(plan, ["a2-n0", "a2-n1", "a2-n5"]) == ["a2-n0 -> a2-n1"]


@pytest.mark.parametrize(
    ("setting", "value", "message"),
    [
        ("fabric_tcp_min_gbps", 0, "fabric_tcp_min_gbps must be a number above 0, not 0"),
        ("fabric_tcp_seconds", 2.5, "fabric_tcp_seconds must be a whole number above 0, not 2.5"),
        ("fabric_tcp_streams", "four", "fabric_tcp_streams must be a whole number above 0, not 'four'"),
        ("fabric_port", 70000, "fabric_port must be a TCP port (1-65535), not 70000"),
    ],
)
def test_a_bad_setting_is_refused_naming_it(setting, value, message):
    with pytest.raises(fabric.FabricError) as err:
        fabric.prepare(example_plan("nvidia-dep16"), dict(SETTINGS, **{setting: value}))
    assert str(err.value) == message


def test_iperf3s_recorded_output_gives_the_receivers_figure():
    got = fabric_iperf.parse((FIXTURES / "iperf3-reverse-2-streams.json").read_text())
    assert got == {"gbps": 20.969, "retransmits": 4, "seconds": 1.0, "error": None}


def test_a_refused_connection_is_an_error_without_a_figure():
    got = fabric_iperf.parse((FIXTURES / "iperf3-refused.json").read_text())
    assert got["gbps"] is None
    assert got["error"] == "iperf3: unable to connect to server: Connection refused"
    assert fabric_iperf.parse("iperf3: error - no such option\n")["error"] == (
        "not iperf3's JSON: iperf3: error - no such option"
    )


def test_the_commands_iperf3_runs():
    assert fabric_iperf.server_argv("iperf3", 5201) == [
        "iperf3", "--server", "--port", "5201", "--daemon", "--pidfile", "/run/kimi-k3-fabric-iperf3.pid",
    ]  # fmt: skip
    assert fabric_iperf.client_argv("/x/iperf3", "10.0.0.2", 5201, 3, 4, True) == [
        "/x/iperf3", "--client", "10.0.0.2", "--port", "5201", "--time", "3", "--parallel", "4",
        "--json", "--connect-timeout", "5000", "--reverse",
    ]  # fmt: skip


def test_the_report_names_the_pair_why_the_figure_and_the_threshold():
    prepared = fabric.prepare(example_plan("nvidia-dep16"), SETTINGS)
    slow = {"pair": "gb300-n0 -> gb300-n1", "gbps": 3.2, "retransmits": 9, "error": None}
    done = fabric.report(prepared, [slow])
    assert done["problems"] == [
        "gb300-n0 -> gb300-n1 (engine group gb300-n0/engine (2 hosts)): TCP 3.20 Gbit/s, below the threshold "
        "5.00 Gbit/s (fabric_tcp_min_gbps)",
        "gb300-n1 -> gb300-n0 (engine group gb300-n0/engine (2 hosts)): no TCP figure: the pair was not measured",
    ]
    assert [r["passed"] for r in done["results"]] == [False, False]
    fast = [dict(slow, gbps=40.0), dict(slow, pair="gb300-n1 -> gb300-n0", gbps=None, error="iperf3: refused")]
    done = fabric.report(prepared, fast)
    assert done["problems"] == [
        "gb300-n1 -> gb300-n0 (engine group gb300-n0/engine (2 hosts)): no TCP figure: iperf3: refused"
    ]
    assert done["lines"][1].split()[:5] == ["gb300-n0", "->", "gb300-n1", "40.00", "pass"]


def test_the_operator_sees_every_round_pair_reason_and_command():
    prepared = fabric.prepare(example_plan("nvidia-dep16"), dict(SETTINGS, fabric_iperf3="/opt/iperf3"))
    ip1 = example_plan("nvidia-dep16")["hosts"]["gb300-n1"]["ip"]
    assert prepared["lines"][:3] == [
        "2 pair(s) in 2 round(s), TCP for 3 s with 4 streams, threshold 5.0 Gbit/s (fabric_tcp_min_gbps)",
        "round 1: gb300-n0 -> gb300-n1: engine group gb300-n0/engine (2 hosts)",
        "  on gb300-n0: /opt/iperf3 --client %s --port 5201 --time 3 --parallel 4 --json --connect-timeout 5000" % ip1,
    ]
    assert prepared["lines"][3].startswith("round 2: gb300-n1 -> gb300-n0")


def test_the_sandbox_measures_its_data_parallel_pair_both_ways_and_nothing_else():
    prepared = fabric.prepare(sandbox_plan("sandbox-cpu"), dict(SETTINGS, fabric_tcp_min_gbps=1))
    assert [p["name"] for p in prepared["pairs"]] == ["k3-sb-dp0 -> k3-sb-dp1", "k3-sb-dp1 -> k3-sb-dp0"]
    assert prepared["rounds"] == [
        {"k3-sb-dp0": {"pair": "k3-sb-dp0 -> k3-sb-dp1", "server": "10.77.0.13", "port": 5201, "reverse": False}},
        {"k3-sb-dp1": {"pair": "k3-sb-dp1 -> k3-sb-dp0", "server": "10.77.0.12", "port": 5201, "reverse": False}},
    ]
