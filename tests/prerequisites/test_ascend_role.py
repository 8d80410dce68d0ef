"""The ascend role in site.yml's prerequisites stage, on real test hosts over SSH.

Real: the hosts (network namespaces + systemd-nspawn + sshd), SSH, the role's checks. TEST DOUBLES
(no NPU here): package k3-double-ascend-a3 (tests/prerequisites/build_repo.py), whose npu-smi prints
the recorded A3 output (8 NPUs x 2 dies), whose hccn_tool prints -ip -g in the recorded format with
an address per host and device, and whose version files, devices and mount sources of the
tutorial's docker run live under k3_ascend_sys_root.
"""

from __future__ import annotations

import os

import pytest
from doubles import TestHosts, recap

HOSTS = TestHosts(
    "hosts-ascend.txt", "inventory-ascend", {"k3-a3-0": "k3-double-ascend-a3", "k3-a3-1": "k3-double-ascend-a3"}
)
SYSROOT = "/var/lib/k3-test-doubles/sysroot"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the test hosts need root")


@pytest.fixture(scope="module")
def test_hosts():
    yield from HOSTS.session()


def test_two_a3_nodes_that_fit_pass_and_nothing_changes(test_hosts):
    out = test_hosts.site("--diff")
    assert [recap(out.stdout)[h]["changed"] for h in ("k3-a3-0", "k3-a3-1")] == [0, 0]


def test_an_npu_address_used_twice_is_refused_naming_both_hosts(test_hosts):
    # k3-a3-1's NPUs take k3-a3-0's addresses (29.1.61.10 ...).
    test_hosts.shell("k3-a3-1", "mkdir -p /etc/k3-test-doubles && echo 61 > /etc/k3-test-doubles/hccn-host")
    try:
        out = test_hosts.site(check=False)
    finally:
        test_hosts.shell("k3-a3-1", "rm /etc/k3-test-doubles/hccn-host")
    assert out.returncode != 0
    assert "NPU network address 29.1.61.10 is used by k3-a3-0 device 0 and k3-a3-1 device 0" in out.stdout


def test_a_missing_device_and_an_old_driver_are_refused_on_their_host(test_hosts):
    test_hosts.shell("k3-a3-1", "mv %s/dev/davinci15 /var/lib/k3-test-doubles/davinci15" % SYSROOT)
    try:
        out = test_hosts.site("-e", '{"k3_ascend_compatibility": {"min_driver": "25.2.0"}}', check=False)
    finally:
        test_hosts.shell("k3-a3-1", "mv /var/lib/k3-test-doubles/davinci15 %s/dev/davinci15" % SYSROOT)
    assert out.returncode != 0
    assert "k3-a3-1: /dev/davinci15 is missing: the spec's docker run mounts it" in out.stdout
    assert "k3-a3-0: /dev/davinci15" not in out.stdout
    for host in ("k3-a3-0", "k3-a3-1"):
        assert "%s: Ascend driver 25.0.rc1.1 is installed; 25.2.0 or newer is required." % host in out.stdout
