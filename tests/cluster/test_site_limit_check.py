"""--limit on the real sandbox cluster: one host, --check and for real, and a role on its own.

Real test hosts (tools/sandbox.sh), real vLLM, vllm-router and MetaService, real systemd and SSH.
Needs root; the deployed sandbox is tests/helpers/cluster_sandbox.py's.
"""

from __future__ import annotations

import os
import re

import pytest
from helpers.sandbox_run import playbook, recap

HOSTS = ["k3-sb-front", "k3-sb-dp0", "k3-sb-dp1", "k3-sb-prefill", "k3-sb-decode"]

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox needs root")
# The limited runs converge what they touch; the role-alone test only reads. (A stopped follower
# healed under --limit, its node 0 with it: tests/cluster/test_site_faults.py.)
LEAVES_CONVERGED = True


def planned_hosts(output):
    """Hosts named in the plan summary the plan task printed."""
    return sorted({m.group(1) for m in re.finditer(r"^    - (k3-sb-\S+)\s", output, re.M)})


@pytest.mark.parametrize("host", ["k3-sb-dp1", "k3-sb-front"])
def test_site_check_limited_to_one_host_succeeds_and_would_change_nothing(cluster, host):
    out = playbook("site.yml", "--limit", host, "--check")
    counts = recap(out.stdout)
    # Only the limited host was touched; the plan is still the whole deployment's.
    assert list(counts) == [host], out.stdout[-3000:]
    assert counts[host]["changed"] == 0 and counts[host]["failed"] == 0, out.stdout[-3000:]
    assert planned_hosts(out.stdout) == sorted(HOSTS)
    assert out.stdout.count("TASK [kimi_k3.serving.k3_plan : Compute the plan of the whole inventory") == 1


def test_site_limited_to_one_host_converges_and_still_verifies_through_the_endpoint(cluster):
    out = playbook("site.yml", "--limit", "k3-sb-decode")
    counts = recap(out.stdout)
    assert list(counts) == ["k3-sb-decode"]
    assert counts["k3-sb-decode"]["changed"] == 0, out.stdout[-3000:]
    # The requests go from the controller through the endpoint, under --limit too.
    assert "KV cache moved" in out.stdout
    assert "answered" in out.stdout


def test_a_role_on_its_own_gets_the_plan_and_runs(cluster, tmp_path):
    book = tmp_path / "verify-alone.yml"
    book.write_text(
        "---\n"
        "- name: The verify role on its own, without the plan play\n"
        "  hosts: prefill:decode\n"
        "  gather_facts: false\n"
        "  roles:\n"
        "    - role: kimi_k3.serving.verify\n"
    )
    out = playbook(book, "-e", "k3_plan_dir=%s" % (tmp_path / "plan"))
    counts = recap(out.stdout)
    assert sorted(counts) == ["k3-sb-decode", "k3-sb-prefill"]
    assert all(c["failed"] == 0 for c in counts.values()), out.stdout[-3000:]
    # The one change: the plan files written to the new folder.
    assert sum(c["changed"] for c in counts.values()) == 1, out.stdout[-3000:]
    assert out.stdout.count("TASK [kimi_k3.serving.k3_plan : Compute the plan of the whole inventory") == 1
    assert (tmp_path / "plan" / "plan.json").is_file()
    assert "Every planned service of this host is running and answers its health URL" in out.stdout
