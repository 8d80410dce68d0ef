"""playbooks/fabric.yml on the deployed sandbox: the real iperf3 between the hosts the plan connects.

The default sandbox's one multi-node group is the data-parallel engine on k3-sb-dp0 and k3-sb-dp1:
measured both ways, in two rounds. iperf3 is Debian's, unpacked on the controller and shared into
the hosts (inventories/sandbox: fabric_iperf3). Asserted: each pair's figure and threshold in the
run folder, nothing left running on the hosts, a threshold the links cannot meet fails naming the
pair, why, the figure and the threshold, and --check measures nothing. Real test hosts
(tests/helpers/cluster_sandbox.py's deployed sandbox). Needs root.
"""

from __future__ import annotations

import json
import os
import re

import pytest
from conftest import ROOT
from helpers.sandbox_run import on, playbook

# Nothing of the deployment changes: servers run for the check only.
LEAVES_CONVERGED = True
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox needs root")

PAIRS = ["k3-sb-dp0 -> k3-sb-dp1", "k3-sb-dp1 -> k3-sb-dp0"]
WHY = ["engine group k3-sb-dp0/engine (2 hosts)"]
IPERF3 = ROOT / ".cache" / "sandbox" / "iperf3" / "usr" / "bin" / "iperf3"


def flat(text):
    return re.sub(r"\s+", " ", text)


def fabric(tmp_path, name, *args, check=True):
    return playbook(
        "playbooks/fabric.yml", "-e", "fabric_runs_dir=%s" % tmp_path, "-e", "fabric_run_name=%s" % name, *args,
        check=check,
    )  # fmt: skip


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
    for host in ("k3-sb-dp0", "k3-sb-dp1"):
        left = on(host, "pgrep -a iperf3; ls /run/kimi-k3-fabric-iperf3.pid 2>&1", check=False)
        assert "iperf3 --server" not in left.stdout and "No such file" in left.stdout, left.stdout
    print("fabric: " + ", ".join("%s %.2f Gbit/s" % (r["pair"], r["gbps"]) for r in results))


def test_a_pair_below_its_threshold_fails_naming_pair_why_figure_and_threshold(cluster, tmp_path):
    out = fabric(tmp_path, "high", "-e", "fabric_tcp_min_gbps=100000", "-e", "fabric_tcp_seconds=1", check=False)
    assert out.returncode != 0
    results = json.loads((tmp_path / "high" / "results.json").read_text())
    text = flat(out.stdout)
    assert "fabric: 2 problem(s); run folder %s" % (tmp_path / "high") in text, out.stdout[-3000:]
    for row in results:
        assert not row["passed"]
        assert (
            "%s (%s): TCP %.2f Gbit/s, below the threshold 100000.00 Gbit/s (fabric_tcp_min_gbps)"
            % (row["pair"], WHY[0], row["gbps"])
            in text
        )


def test_check_mode_shows_the_pairs_and_commands_and_measures_nothing(cluster, tmp_path):
    out = fabric(tmp_path, "dry", "--check")
    text = flat(out.stdout)
    assert "k3-sb-dp0 -> k3-sb-dp1: engine group k3-sb-dp0/engine (2 hosts)" in text, out.stdout[-3000:]
    assert "on k3-sb-dp0: %s --client 10.77.0.13 --port 5201 --time 2 --parallel 4 --json" % IPERF3 in text
    assert not (tmp_path / "dry").exists()
