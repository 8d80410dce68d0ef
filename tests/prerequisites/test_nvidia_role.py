"""The nvidia role in site.yml's prerequisites stage, on real test hosts over SSH.

Real: the hosts (network namespaces + systemd-nspawn + sshd), apt and dpkg against a signed
repository, systemd, the reboot. TEST DOUBLES (no GPU or NVIDIA repository here): the packages
of that repository (tests/prerequisites/build_repo.py), whose nvidia-smi prints recorded real
outputs of drivers 575.57.08 (B200) and 580.126.09 (GB200), whose kernel-module double is
"loaded" at boot, and whose IMEX daemon sleeps. k3-nv-old starts on r575, k3-nv-new on r580
without the container toolkit (tests/prerequisites/hosts.txt).
"""

from __future__ import annotations

import json
import os
import re

import pytest
from doubles import REPO, TestHosts, recap

HOSTS = TestHosts(
    "hosts.txt",
    "inventory",
    {"k3-nv-old": "nvidia-driver-575-open", "k3-nv-new": "nvidia-driver-580-open"},
)
NAMES = ("k3-nv-old", "k3-nv-new")
UPGRADE = ("-e", "k3_nvidia_driver_upgrade=true", "-e", "k3_nvidia_reboot=true")

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the test hosts need root")


@pytest.fixture(scope="module")
def test_hosts():
    yield from HOSTS.session()


STATE = (
    "dpkg-query -W -f '${Package} ${Version} ${db:Status-Abbrev}\\n' 'nvidia*' 2>/dev/null | sort;"
    " dpkg --get-selections 'nvidia*' | sort; ls /etc/apt/sources.list.d /etc/apt/preferences.d;"
    " cat /etc/docker/daemon.json /etc/nvidia-imex/nodes_config.cfg 2>&1;"
    " systemctl is-active nvidia-imex; cat /proc/sys/kernel/random/boot_id"
)


def state(hosts):
    """What a change on a host would show: packages, selections, apt sources and pins, configs, services."""
    return {host: hosts.shell(host, STATE) for host in NAMES}


def test_the_doubles_report_the_recorded_drivers(test_hosts):
    assert "Driver Version: 575.57.08      CUDA Version: 12.9" in test_hosts.shell("k3-nv-old", "nvidia-smi")
    assert "Driver Version: 580.126.09     CUDA Version: 13.0" in test_hosts.shell("k3-nv-new", "nvidia-smi")


def test_check_mode_reports_the_upgrade_and_changes_nothing(test_hosts):
    before = state(test_hosts)
    out = test_hosts.site("--check", "--diff", *UPGRADE)
    counts = recap(out.stdout)
    assert counts["k3-nv-old"]["changed"] > 0 and counts["k3-nv-new"]["changed"] > 0
    assert (
        "k3-nv-old: driver 575.57.08 loaded; install the r580 branch (nvidia-driver-580-open) from file:" in out.stdout
    )
    assert "k3-nv-new: driver 580.126.09 loaded; no driver change;\n" in out.stdout
    assert '"path": "nvidia-container-runtime"' in out.stdout  # the daemon.json diff
    assert state(test_hosts) == before


def test_r575_is_refused_with_the_spec_advice_and_nothing_changes_anywhere(test_hosts):
    before = state(test_hosts)
    out = test_hosts.site(check=False)
    text = out.stdout + out.stderr
    assert out.returncode != 0
    assert "k3-nv-old: NVIDIA driver 575.57.08 is loaded (CUDA 12.9), but vllm/vllm-openai:kimi-k3" in text
    assert "build vLLM from the K3 branch against cu129 PyTorch" in text
    assert "k3-nv-new: NVIDIA driver" not in text
    assert state(test_hosts) == before


def test_opted_in_upgrade_installs_pins_holds_reboots_and_sets_up_the_runtime(test_hosts):
    boot_before = test_hosts.shell("k3-nv-old", "cat /proc/sys/kernel/random/boot_id")
    out = test_hosts.site(*UPGRADE)
    counts = recap(out.stdout)
    assert counts["k3-nv-old"]["changed"] > 0 and counts["k3-nv-new"]["changed"] > 0
    # Rebooted into the new driver: a new boot, the recorded r580 output, r575 gone.
    assert test_hosts.shell("k3-nv-old", "cat /proc/sys/kernel/random/boot_id") != boot_before
    for host in NAMES:
        assert "Driver Version: 580.126.09" in test_hosts.shell(host, "nvidia-smi")
    packages = test_hosts.shell(
        "k3-nv-old", "dpkg-query -W -f '${Package} ${Version} ${db:Status-Abbrev}\\n' 'nvidia*'"
    )
    assert "nvidia-driver-580-open 580.126.09-0ubuntu1 hi" in packages
    assert not re.search(r"^nvidia-driver-575-open \S+ [ih]i", packages, re.M), packages
    assert "Pin: version 580.*" in test_hosts.shell("k3-nv-old", "cat /etc/apt/preferences.d/k3-nvidia-driver")
    sources = test_hosts.shell("k3-nv-old", "cat /etc/apt/sources.list.d/k3-nvidia-cuda.sources")
    assert "Signed-By: %s/keyring.gpg" % REPO in sources and "Suites: /" in sources
    # k3-nv-new had r580 already: no driver repository, no hold; the toolkit and IMEX only.
    assert "hi" not in test_hosts.shell("k3-nv-new", "dpkg-query -W -f '${db:Status-Abbrev}' nvidia-driver-580-open")
    for host in NAMES:
        assert test_hosts.shell(host, "dpkg-query -W -f '${Version}' nvidia-container-toolkit") == "1.18.0-1"
        daemon = json.loads(test_hosts.shell(host, "cat /etc/docker/daemon.json"))
        assert daemon["runtimes"]["nvidia"]["path"] == "nvidia-container-runtime"
        assert test_hosts.shell(host, "systemctl is-active nvidia-imex") == "active"
        assert test_hosts.shell(host, "cat /etc/nvidia-imex/nodes_config.cfg").split() == ["10.77.2.41", "10.77.2.42"]


def test_second_run_changes_nothing(test_hosts):
    out = test_hosts.site(*UPGRADE)
    counts = recap(out.stdout)
    assert [counts[h]["changed"] for h in NAMES] == [0, 0], out.stdout[-3000:]
