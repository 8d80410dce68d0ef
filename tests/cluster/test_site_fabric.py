"""playbooks/fabric.yml on the deployed sandbox: the real iperf3 between the hosts the plan connects,
then the vendors' tools.

The default sandbox's one multi-node group is the data-parallel engine on k3-sb-dp0 and k3-sb-dp1:
measured both ways, in two rounds. iperf3 is Debian's, unpacked on the controller and shared into
the hosts (inventories/sandbox: fabric_iperf3). The vendors' tools are TEST DOUBLES that print real
recorded outputs (tests/doubles/fabric_tools.py; inventories/sandbox runs them as an NVIDIA cluster
over RDMA): nccl-tests from dp0 across the group, perftest rail by rail both ways, its server and
client connecting for real; the MI355X and Ascend tools through -e fabric_platform. A test makes a
group, pair or NPU fail by choosing a failing recording on its host. Asserted: each figure and
threshold in the run folder, nothing left running on the hosts, every failure named with its group
or pair, why and cause, --check runs nothing, and a second `make sandbox`'s set-up leaves the hosts'
shared programs in place. Real test hosts (tests/helpers/cluster_sandbox.py's deployed sandbox).
Needs root.
"""

from __future__ import annotations

import json
import os
import re

import pytest
from conftest import ROOT
from helpers.sandbox_run import INVENTORY, on, playbook, run, ssh_each

# Nothing of the deployment changes: servers run for the check only.
LEAVES_CONVERGED = True
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox needs root")

PAIRS = ["k3-sb-dp0 -> k3-sb-dp1", "k3-sb-dp1 -> k3-sb-dp0"]
WHY = ["engine group k3-sb-dp0/engine (2 hosts)"]
IPERF3 = ROOT / ".cache" / "sandbox" / "iperf3" / "usr" / "bin" / "iperf3"
NODE_EXPORTER = ROOT / ".cache" / "sandbox" / "node-exporter" / "usr" / "bin" / "prometheus-node-exporter"
GROUP = "group k3-sb-dp0/engine"
CHOICES = "/run/k3-fabric-double/choices.json"
RAILS = ["(mlx5_0 -> mlx5_0)", "(mlx5_1 -> mlx5_1)"]


def flat(text):
    return re.sub(r"\s+", " ", text)


def fabric(tmp_path, name, *args, check=True):
    return playbook(
        "playbooks/fabric.yml", "-e", "fabric_runs_dir=%s" % tmp_path, "-e", "fabric_run_name=%s" % name, *args,
        check=check,
    )  # fmt: skip


def choose(recordings):
    """{host: {key: recording}} for the tool doubles (an empty mapping: their passing defaults)."""
    ssh_each(
        INVENTORY,
        {
            host: "mkdir -p /run/k3-fabric-double && printf %%s '%s' > %s" % (json.dumps(keys), CHOICES)
            for host, keys in recordings.items()
        },
    )


def tools(folder):
    return {(r["test"], r["subject"]): r for r in json.loads((folder / "tools.json").read_text())}


def test_make_sandbox_set_up_again_leaves_the_running_hosts_their_shared_programs(cluster, tmp_path):
    """A second `make sandbox` runs its set-up steps again while the hosts run: the folders the hosts
    mount must stay the ones they mount (the fabric check found no iperf3 after a second run)."""
    inodes = "stat -c %%i %s %s" % (IPERF3.parent, NODE_EXPORTER.parent)
    before = on("k3-sb-dp0", inodes).stdout
    run("make", "--no-print-directory", "test-data")
    after = on("k3-sb-dp0", inodes + " && test -x %s && test -x %s" % (IPERF3, NODE_EXPORTER), check=False)
    assert after.returncode == 0 and after.stdout == before, (before, after.stdout, after.stderr)
    # The hosts see the same folders as the controller, with the programs in them.
    assert before.split() == [str(os.stat(IPERF3.parent).st_ino), str(os.stat(NODE_EXPORTER.parent).st_ino)]


def test_every_pair_the_plan_connects_is_measured_and_nothing_stays_running(cluster, tmp_path):
    out = fabric(tmp_path, "ok")
    results = json.loads((tmp_path / "ok" / "results.json").read_text())
    assert [r["pair"] for r in results] == PAIRS, results
    for row in results:
        assert row["why"] == WHY and row["test"] == "tcp" and row["passed"] and row["error"] is None, row
        # The sandbox's floor (inventories/sandbox: fabric_tcp_min_gbps) and a real figure above it.
        assert row["threshold_gbps"] == 1.0 and row["gbps"] > 1.0 and row["retransmits"] is not None, row
    assert "2 pair(s) in 2 round(s), TCP for 2 s with 4 streams, threshold 1.0 Gbit/s" in flat(out.stdout)
    summary = (tmp_path / "ok" / "summary.txt").read_text()
    assert summary.splitlines()[0].split() == ["PAIR", "GBIT/S", "RESULT", "WHY"], summary
    # The vendors' tools (doubles printing recordings): nccl-tests across the group from dp0, perftest
    # both ways on both rails, every one judged against the data file's threshold.
    found = tools(tmp_path / "ok")
    assert (
        found[("all_reduce_perf", GROUP)]["figure"] == 338.82 and found[("all_reduce_perf", GROUP)]["threshold"] == 270
    )
    assert found[("alltoall_perf", GROUP)]["figure"] == 35.9
    pairs = ["%s %s" % (pair, rail) for pair in PAIRS for rail in RAILS]
    for test, figure, threshold in (("ib_write_bw", 98.01, 80), ("ib_read_bw", 98.216, 80), ("ib_write_lat", 1.47, 5)):
        for pair in pairs:
            row = found[(test, pair)]
            assert (row["figure"], row["threshold"], row["passed"], row["why"]) == (figure, threshold, True, WHY), row
    assert len(found) == 2 + 3 * len(pairs) and all(r["passed"] for r in found.values())
    outputs = (tmp_path / "ok" / "tool-outputs.txt").read_text()
    assert (
        "=== all_reduce_perf k3-sb-dp0/engine (exit 0)" in outputs and "-np 4 -H 10.77.0.12:2,10.77.0.13:2" in outputs
    )
    assert "TEST GROUP OR PAIR FIGURE THRESHOLD RESULT" in flat((tmp_path / "ok" / "summary.txt").read_text())
    for host in ("k3-sb-dp0", "k3-sb-dp1"):
        left = on(
            host,
            "pgrep -af 'iperf[3]|fabric_tool[s]'; ls /run/kimi-k3-fabric-iperf3.pid /run/kimi-k3-fabric 2>&1",
            check=False,
        )
        assert "iperf3 --server" not in left.stdout and "fabric_tools" not in left.stdout, left.stdout
        assert left.stdout.count("No such file") == 2, left.stdout
    print("fabric: " + ", ".join("%s %.2f Gbit/s" % (r["pair"], r["gbps"]) for r in results))


def test_every_pair_group_or_rail_below_its_threshold_fails_naming_it_why_and_the_figure(cluster, tmp_path):
    """One run with three faults: a TCP floor the links cannot meet, the group's nccl-tests printing
    the GH200 run with wrong values (dp0 launches it), and a line rate of 400 Gbit/s that puts every
    perftest rail (98 Gbit/s recorded on 100) below its 320."""
    choose(
        {
            "k3-sb-dp0": {
                "all_reduce_perf": "nvidia/nccl-tests_all_reduce_perf_2xGH200_2node_wrong-FAILED_nccl2.29.2.txt"
            }
        }
    )
    try:
        out = fabric(
            tmp_path, "bad", "-e", "fabric_tcp_min_gbps=100000", "-e", "fabric_tcp_seconds=1",
            "-e", "fabric_rdma_gbps=400", check=False,
        )  # fmt: skip
    finally:
        choose({"k3-sb-dp0": {}})
    assert out.returncode != 0
    text = flat(out.stdout)
    assert "fabric: 11 problem(s); run folder %s" % (tmp_path / "bad") in text, out.stdout[-3000:]
    for row in json.loads((tmp_path / "bad" / "results.json").read_text()):
        assert not row["passed"]
        assert (
            "%s (%s): TCP %.2f Gbit/s, below the threshold 100000.00 Gbit/s (fabric_tcp_min_gbps)"
            % (row["pair"], WHY[0], row["gbps"])
            in text
        )
    assert (
        "all_reduce_perf: group k3-sb-dp0/engine (engine group k3-sb-dp0/engine (2 hosts)): "
        "96 wrong values at 1048576 B" in text
    ), out.stdout[-3000:]
    assert (
        "ib_write_bw: k3-sb-dp1 -> k3-sb-dp0 (mlx5_1 -> mlx5_1) (engine group k3-sb-dp0/engine (2 hosts)): average "
        "bandwidth 98.01 Gbit/s at 64 KiB, below the threshold 320 Gbit/s" in text
    )
    found = tools(tmp_path / "bad")
    assert found[("alltoall_perf", GROUP)]["passed"] and found[("ib_write_lat", PAIRS[0] + " " + RAILS[0])]["passed"]
    assert [r["passed"] for r in found.values()].count(False) == 9


def test_mi355x_tools_run_rccl_tests_and_perftest(cluster, tmp_path):
    fabric(tmp_path, "rocm", "-e", "fabric_platform=rocm", "-e", "fabric_tcp_seconds=1")
    found = tools(tmp_path / "rocm")
    # The data file reads MI355X's all_reduce at 8 GiB (the recording goes on to 16 GiB: 385.98).
    assert (found[("all_reduce_perf", GROUP)]["figure"], found[("all_reduce_perf", GROUP)]["threshold"]) == (
        384.74,
        300,
    )
    assert (found[("alltoall_perf", GROUP)]["figure"], found[("alltoall_perf", GROUP)]["threshold"]) == (91.09, 70)
    assert len(found) == 14 and all(r["passed"] for r in found.values())
    assert "/opt/rccl-tests/build/all_reduce_perf" in (tmp_path / "rocm" / "tool-outputs.txt").read_text()


FAULT = "ascend/hccn_tool_-net_health_-g_Fault_after-link-down_mindcluster-doc-sample.txt"


def test_ascend_checks_every_npu_pings_the_peers_and_runs_the_hccl_test(cluster, tmp_path):
    # NPU 1 of dp1: its link down, its health Fault; the pings from NPU 1 of dp0 are answered by nobody.
    choose(
        {
            "k3-sb-dp1": {
                "hccn_tool -link@1": "built/hccn_tool_-link_-g_DOWN_built-from-format.txt",
                "hccn_tool -net_health@1": FAULT,
            },
            "k3-sb-dp0": {"hccn_tool -ping@1": "built/hccn_tool_-ping_-g_lost_built-from-format.txt"},
        }
    )
    try:
        out = fabric(tmp_path, "npu", "-e", "fabric_platform=ascend", "-e", "fabric_tcp_seconds=1", check=False)
    finally:
        choose({"k3-sb-dp0": {}, "k3-sb-dp1": {}})
    text = flat(out.stdout)
    found = tools(tmp_path / "npu")
    assert found[("all_reduce_test", GROUP)]["passed"] and found[("all_reduce_test", GROUP)]["figure"] == 144.09582
    # Two NPUs a host: link and health on each, and each way every NPU pings both of the other's.
    assert len(found) == 1 + 2 * 2 * 2 + 2 * 2 * 2
    assert "fabric: 4 problem(s)" in text, out.stdout[-3000:]
    assert "hccn_tool -link: k3-sb-dp1 NPU 1 (NPU network of k3-sb-dp1): link status is DOWN" in text
    assert "hccn_tool -net_health: k3-sb-dp1 NPU 1 (NPU network of k3-sb-dp1): " in text and "Fault" in text
    for peer in (0, 1):
        assert (
            "hccn_tool -ping: k3-sb-dp0 -> k3-sb-dp1 NPU 1 -> %d (engine group k3-sb-dp0/engine (2 hosts)): " % peer
            in text
        )
    assert found[("hccn_tool -ping", "k3-sb-dp1 -> k3-sb-dp0 NPU 1 -> 1")]["passed"]
    assert found[("hccn_tool -ping", "k3-sb-dp0 -> k3-sb-dp1 NPU 0 -> 1")]["passed"]
    outputs = (tmp_path / "npu" / "tool-outputs.txt").read_text()
    assert "-i 1 -ping -g address 10.77.0.99" in outputs


def test_check_mode_shows_the_pairs_and_commands_and_measures_nothing(cluster, tmp_path):
    out = fabric(tmp_path, "dry", "--check")
    text = flat(out.stdout)
    assert "k3-sb-dp0 -> k3-sb-dp1: engine group k3-sb-dp0/engine (2 hosts)" in text, out.stdout[-3000:]
    assert "on k3-sb-dp0: %s --client 10.77.0.13 --port 5201 --time 2 --parallel 4 --json" % IPERF3 in text
    assert "blackwell fabric tools (rdma): 14 check(s) in 8 step(s)" in text
    assert (
        "serve on k3-sb-dp1: %s -d mlx5_0 -p 18515 -F --report_gbits -q 4"
        % (ROOT / "tests/doubles/fabric/bin/ib_write_bw")
        in text
    )
    assert not (tmp_path / "dry").exists()
