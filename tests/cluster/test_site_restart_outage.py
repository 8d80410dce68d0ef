"""restart.yml on the default sandbox, where every role has one replica: the outage is named first.

The default sandbox runs one prefill, one decode and one data-parallel engine behind a vllm-router
with a fixed worker list, so no rolling restart can avoid stopping the service. Without the typed
confirmation restart.yml refuses naming every reason and restarts nothing; --check shows the
batches and restarts nothing either. Real test hosts and services (tests/helpers/cluster_sandbox.py's
deployed sandbox). Needs root.
"""

from __future__ import annotations

import os
import re

import pytest
from helpers.sandbox_run import main_pids, playbook

# The refused restart restarts nothing.
LEAVES_CONVERGED = True
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox needs root")

UNITS = {
    "k3-sb-front": "k3-router",
    "k3-sb-dp0": "k3-engine",
    "k3-sb-prefill": "k3-prefill",
    "k3-sb-decode": "k3-decode",
}


def pids():
    return main_pids(UNITS)


def test_restart_without_a_second_replica_names_the_outage_and_restarts_nothing(cluster):
    before = pids()
    assert all(before.values()), before
    refused = playbook("playbooks/restart.yml", check=False)
    text = re.sub(r"\s+", " ", refused.stdout + refused.stderr)
    assert refused.returncode != 0
    assert "restart not confirmed, nothing was restarted" in text, text[-3000:]
    for reason in (
        "role prefill has a single replica group (k3-sb-prefill/prefill)",
        "role decode has a single replica group (k3-sb-decode/decode)",
        "role engine has a single replica group (k3-sb-dp0/engine)",
        "k3-sb-front/router has a fixed worker list",
    ):
        assert reason in text, (reason, text[-3000:])
    assert pids() == before

    checked = playbook("playbooks/restart.yml", "--check")
    summary = re.sub(r"\s+", " ", checked.stdout)
    assert "would restart (--check) 3 replica group(s) in 3 batch(es)" in summary, summary[-3000:]
    assert pids() == before
