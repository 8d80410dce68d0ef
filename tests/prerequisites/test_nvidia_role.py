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
import subprocess

import pytest
from conftest import ROOT, VENV_BIN, ansible_env

HERE = ROOT / "tests" / "prerequisites"
INVENTORY = HERE / "inventory"
REPO = ROOT / ".cache" / "test-repo"
HOSTS = ("k3-nv-old", "k3-nv-new")
UPGRADE = ("-e", "k3_nvidia_driver_upgrade=true", "-e", "k3_nvidia_reboot=true")
SANDBOX_ENV = {
    "K3SB_HOSTS_FILE": str(HERE / "hosts.txt"),
    "K3SB_EXTRA_BINDS": str(REPO),
    "K3SB_INVENTORY": str(INVENTORY / "hosts.yml"),
}

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the test hosts need root")


def run(*cmd, check=True, env=None, timeout=1800):
    proc = subprocess.run(
        [str(c) for c in cmd],
        cwd=ROOT,
        env={**ansible_env(), **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if check and proc.returncode:
        raise AssertionError(
            "%s failed (%d):\n%s\n%s" % (cmd, proc.returncode, proc.stdout[-6000:], proc.stderr[-3000:])
        )
    return proc


def site(*args, check=True):
    return run(
        VENV_BIN / "ansible-playbook", "site.yml", "-i", INVENTORY, "--tags", "prerequisites", *args, check=check
    )


def shell(host, command):
    """stdout of a shell command on a test host (ad-hoc, JSON callback)."""
    out = run(
        VENV_BIN / "ansible",
        host,
        "-i",
        INVENTORY,
        "-m",
        "ansible.builtin.shell",
        "-a",
        command,
        env={"ANSIBLE_LOAD_CALLBACK_PLUGINS": "1", "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json"},
    )
    return json.loads(out.stdout)["plays"][0]["tasks"][0]["hosts"][host]["stdout"]


def recap(output):
    return {
        m.group(1): {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
        for m in re.finditer(r"^(\S+)\s+:\s+(ok=.*)$", output, re.M)
    }


STATE = (
    "dpkg-query -W -f '${Package} ${Version} ${db:Status-Abbrev}\\n' 'nvidia*' 2>/dev/null | sort;"
    " dpkg --get-selections 'nvidia*' | sort; ls /etc/apt/sources.list.d /etc/apt/preferences.d;"
    " cat /etc/docker/daemon.json /etc/nvidia-imex/nodes_config.cfg 2>&1;"
    " systemctl is-active nvidia-imex; cat /proc/sys/kernel/random/boot_id"
)


def state():
    """What a change on a host would show: packages, selections, apt sources and pins, configs, services."""
    return {host: shell(host, STATE) for host in HOSTS}


@pytest.fixture(scope="module")
def hosts():
    run(VENV_BIN / "python", HERE / "build_repo.py", REPO)
    run("tools/sandbox.sh", "down", env=SANDBOX_ENV)
    run("tools/sandbox.sh", "up", env=SANDBOX_ENV)
    try:
        # The hosts have no route out: Debian's own mirror would make every apt-get update fail.
        # Only the local repository of doubles is reachable, as the roles configure it.
        run(
            VENV_BIN / "ansible",
            "all",
            "-i",
            INVENTORY,
            "-m",
            "ansible.builtin.shell",
            "-a",
            "rm -f /etc/apt/sources.list /etc/apt/sources.list.d/*",
        )
        for host, deb in (("k3-nv-old", "nvidia-driver-575-open_*"), ("k3-nv-new", "nvidia-driver-580-open_*")):
            [path] = REPO.glob("pool/" + deb)
            run(VENV_BIN / "ansible", host, "-i", INVENTORY, "-m", "ansible.builtin.apt", "-a", "deb=%s" % path)
        yield
    finally:
        run("tools/sandbox.sh", "down", env=SANDBOX_ENV, check=False)


def test_the_doubles_report_the_recorded_drivers(hosts):
    assert "Driver Version: 575.57.08      CUDA Version: 12.9" in shell("k3-nv-old", "nvidia-smi")
    assert "Driver Version: 580.126.09     CUDA Version: 13.0" in shell("k3-nv-new", "nvidia-smi")


def test_check_mode_reports_the_upgrade_and_changes_nothing(hosts):
    before = state()
    out = site("--check", "--diff", *UPGRADE)
    counts = recap(out.stdout)
    assert counts["k3-nv-old"]["changed"] > 0 and counts["k3-nv-new"]["changed"] > 0
    assert (
        "k3-nv-old: driver 575.57.08 loaded; install the r580 branch (nvidia-driver-580-open) from file:" in out.stdout
    )
    assert "k3-nv-new: driver 580.126.09 loaded; no driver change;\n" in out.stdout
    assert '"path": "nvidia-container-runtime"' in out.stdout  # the daemon.json diff
    assert state() == before


def test_r575_is_refused_with_the_spec_advice_and_nothing_changes_anywhere(hosts):
    before = state()
    out = site(check=False)
    text = out.stdout + out.stderr
    assert out.returncode != 0
    assert "k3-nv-old: NVIDIA driver 575.57.08 is loaded (CUDA 12.9), but vllm/vllm-openai:kimi-k3" in text
    assert "build vLLM from the K3 branch against cu129 PyTorch" in text
    assert "k3-nv-new: NVIDIA driver" not in text
    assert state() == before


def test_opted_in_upgrade_installs_pins_holds_reboots_and_sets_up_the_runtime(hosts):
    boot_before = shell("k3-nv-old", "cat /proc/sys/kernel/random/boot_id")
    out = site(*UPGRADE)
    counts = recap(out.stdout)
    assert counts["k3-nv-old"]["changed"] > 0 and counts["k3-nv-new"]["changed"] > 0
    # Rebooted into the new driver: a new boot, the recorded r580 output, r575 gone.
    assert shell("k3-nv-old", "cat /proc/sys/kernel/random/boot_id") != boot_before
    for host in HOSTS:
        assert "Driver Version: 580.126.09" in shell(host, "nvidia-smi")
    packages = shell("k3-nv-old", "dpkg-query -W -f '${Package} ${Version} ${db:Status-Abbrev}\\n' 'nvidia*'")
    assert "nvidia-driver-580-open 580.126.09-0ubuntu1 hi" in packages
    assert not re.search(r"^nvidia-driver-575-open \S+ [ih]i", packages, re.M), packages
    assert "Pin: version 580.*" in shell("k3-nv-old", "cat /etc/apt/preferences.d/k3-nvidia-driver")
    sources = shell("k3-nv-old", "cat /etc/apt/sources.list.d/k3-nvidia-cuda.sources")
    assert "Signed-By: %s/keyring.gpg" % REPO in sources and "Suites: /" in sources
    # k3-nv-new had r580 already: no driver repository, no hold; the toolkit and IMEX only.
    assert "hi" not in shell("k3-nv-new", "dpkg-query -W -f '${db:Status-Abbrev}' nvidia-driver-580-open")
    for host in HOSTS:
        assert shell(host, "dpkg-query -W -f '${Version}' nvidia-container-toolkit") == "1.18.0-1"
        daemon = json.loads(shell(host, "cat /etc/docker/daemon.json"))
        assert daemon["runtimes"]["nvidia"]["path"] == "nvidia-container-runtime"
        assert shell(host, "systemctl is-active nvidia-imex") == "active"
        assert shell(host, "cat /etc/nvidia-imex/nodes_config.cfg").split() == ["10.77.0.41", "10.77.0.42"]


def test_second_run_changes_nothing(hosts):
    out = site(*UPGRADE)
    counts = recap(out.stdout)
    assert [counts[h]["changed"] for h in HOSTS] == [0, 0], out.stdout[-3000:]
