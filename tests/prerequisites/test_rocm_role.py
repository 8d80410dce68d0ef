"""The rocm role in site.yml's prerequisites stage, on a real test host over SSH.

Real: the host (network namespace + systemd-nspawn + sshd), SSH, the role's checks and changes.
TEST DOUBLES (no AMD GPU here): package k3-double-amd-instinct (tests/prerequisites/build_repo.py),
whose amd-smi prints the recorded outputs of an MI350X node with ROCm 6.4.1, and whose /dev and
/sys stand-ins (with a recorded /sys/class/infiniband device) live under k3_rocm_sys_root.
"""

from __future__ import annotations

import json
import os

import pytest
from doubles import TestHosts, recap

HOSTS = TestHosts("hosts-rocm.txt", "inventory-rocm", {"k3-amd-0": "k3-double-amd-instinct"})
MEMLOCK = "/etc/security/limits.d/90-k3-rdma-memlock.conf"
# The site's validated pair for this (recorded) node: ROCm 6.4.1 and amdgpu 6.12.12 accepted.
SITE_TABLE = json.dumps(
    {"k3_rocm_compatibility": [{"models": ["MI350X"], "min_rocm": "6.4.0", "min_amdgpu": "6.12", "note": "site"}]}
)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the test hosts need root")


@pytest.fixture(scope="module")
def test_hosts():
    yield from HOSTS.session()


def test_rocm_older_than_the_shipped_table_is_refused_and_nothing_changes(test_hosts):
    out = test_hosts.site(check=False)
    assert out.returncode != 0
    assert (
        "k3-amd-0: ROCm 6.4.1 is installed; AMD Instinct MI350X needs ROCm 7.0.0 or newer "
        "(CDNA4 (gfx950) support arrived with ROCm 7.0). Fix: upgrade ROCm." in out.stdout
    )
    assert test_hosts.shell("k3-amd-0", "test -e %s && echo present || echo absent" % MEMLOCK) == "absent"


def test_a_missing_kfd_is_refused_naming_it(test_hosts):
    test_hosts.shell("k3-amd-0", "mv /var/lib/k3-test-doubles/sysroot/dev/kfd /var/lib/k3-test-doubles/kfd")
    try:
        out = test_hosts.site("-e", SITE_TABLE, check=False)
    finally:
        test_hosts.shell("k3-amd-0", "mv /var/lib/k3-test-doubles/kfd /var/lib/k3-test-doubles/sysroot/dev/kfd")
    assert out.returncode != 0
    assert "k3-amd-0: /dev/kfd is missing or not readable and writable" in out.stdout


def test_check_mode_then_a_host_within_the_site_table_gets_the_rdma_memlock_limits(test_hosts):
    checked = test_hosts.site("--check", "--diff", "-e", SITE_TABLE)
    assert recap(checked.stdout)["k3-amd-0"]["changed"] == 1 and "memlock    unlimited" in checked.stdout
    assert test_hosts.shell("k3-amd-0", "test -e %s && echo present || echo absent" % MEMLOCK) == "absent"
    out = test_hosts.site("-e", SITE_TABLE)
    assert recap(out.stdout)["k3-amd-0"]["changed"] == 1
    assert "*    hard    memlock    unlimited" in test_hosts.shell("k3-amd-0", "cat %s" % MEMLOCK)
    again = test_hosts.site("-e", SITE_TABLE)
    assert recap(again.stdout)["k3-amd-0"]["changed"] == 0
