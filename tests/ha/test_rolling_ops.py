"""Day-two operations on the HA sandbox under client load: no request may fail.

Real test hosts (tools/sandbox.sh with tools/sandbox-ha-hosts.txt), the real vllm-router in P/D
mode (--enable-igw) in front of two prefill and two decode engines of the real vLLM (CPU build),
over SSH with systemd. While each operation runs, the real ``vllm bench serve`` sends rounds of
short chat requests at concurrency 4 through the router (tests/traffic.py); each test asserts that
none failed and that the operation really happened (every engine's process replaced, the new
argv running). The module deploys the HA sandbox once (make sandbox-ha) and removes it at its end.
Needs root.
"""

from __future__ import annotations

import os
import re
import subprocess
import time

import pytest
from conftest import ROOT, VENV_BIN, ansible_env
from sandbox_run import run
from traffic import Traffic

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox needs root")

INVENTORY = ROOT / "inventories" / "sandbox-ha"
HOSTS = {
    "K3SB_HOSTS_FILE": str(ROOT / "tools" / "sandbox-ha-hosts.txt"),
    "K3SB_INVENTORY": str(INVENTORY / "hosts.yml"),
}
ENGINES = {
    "k3-sb-prefill": "k3-prefill",
    "k3-sb-prefill2": "k3-prefill",
    "k3-sb-decode": "k3-decode",
    "k3-sb-decode2": "k3-decode",
}
ROUTER = "http://10.77.0.11:8000"
MODEL = ROOT / ".cache" / "sandbox" / "models" / "tiny-llama"


@pytest.fixture(scope="module")
def ha(tmp_path_factory):
    secrets_dir = tmp_path_factory.mktemp("secrets")
    args = subprocess.run(
        ["tools/sandbox_secrets.sh", str(secrets_dir)], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    key = (
        subprocess.run(
            [
                VENV_BIN / "ansible-vault",
                "view",
                "--vault-password-file",
                secrets_dir / "vault-password",
                secrets_dir / "secrets.yml",
            ],
            capture_output=True,
            text=True,
            check=True,
            env=ansible_env(),
        )
        .stdout.split("k3_api_key:", 1)[1]
        .strip()
    )
    run(ROOT / ".venv" / "vllm" / "bin" / "python", "tools/tiny_model.py", str(MODEL))
    run("tools/sandbox.sh", "up", env=HOSTS)
    try:
        playbook("site.yml", *args)
        yield {"args": args, "key": key, "results": tmp_path_factory.mktemp("traffic")}
    finally:
        run("tools/sandbox.sh", "down", check=False, env=HOSTS)


def playbook(name, *args, check=True):
    return run(VENV_BIN / "ansible-playbook", name, "-i", INVENTORY, *args, check=check)


def main_pids():
    """Each engine's MainPID, read over SSH."""
    out = {}
    for host, unit in ENGINES.items():
        proc = run(
            VENV_BIN / "ansible",
            host,
            "-i",
            INVENTORY,
            "-m",
            "ansible.builtin.command",
            "-a",
            "systemctl show -p MainPID --value %s" % unit,
        )
        out[host] = int(proc.stdout.strip().splitlines()[-1])
    return out


def under_traffic(ha, name, *args):
    """Run a playbook while vllm bench serve sends requests through the router; its output and the totals."""
    load = Traffic(ROUTER, "kimi-k3-sandbox", MODEL, ha["results"] / name, key=ha["key"])
    load.start()
    time.sleep(3)
    started = time.monotonic()
    try:
        out = playbook(*args, check=False)
    finally:
        took = time.monotonic() - started
        time.sleep(3)
        totals = load.finish()
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-3000:]
    print("%s: %.0f s, %s" % (name, took, {k: v for k, v in totals.items() if k != "broken"}))
    return out, totals


def assert_no_failed_request(totals):
    assert not totals["broken"], totals["broken"]
    assert totals["failed"] == 0, totals["errors"][:5]
    assert totals["completed"] >= 40 and totals["rounds"] >= 2, totals


def test_restart_replaces_every_engine_and_fails_no_request(ha):
    before = main_pids()
    out, totals = under_traffic(ha, "restart", "playbooks/restart.yml", *ha["args"])
    assert_no_failed_request(totals)
    after = main_pids()
    assert all(after[h] and after[h] != before[h] for h in ENGINES), (before, after)
    assert re.search(r"restarted 4 replica group\(s\) in 4 batch\(es\)", out.stdout), out.stdout[-3000:]
    # No outage to confirm: every role has two groups and the router takes workers back at runtime.
    assert "This restart stops serving" not in out.stdout


def test_upgrade_rolls_a_changed_engine_parameter_onto_every_engine_and_fails_no_request(ha):
    new = ["-e", '{"k3_vllm_args": [{"--shutdown-timeout": 30}]}']
    dry = playbook("playbooks/upgrade.yml", *ha["args"], *new, "--check")
    assert "Replica groups to restart: k3-sb-prefill/prefill" in dry.stdout, dry.stdout[-3000:]
    assert "would restart (--check)" in dry.stdout
    before = main_pids()
    assert before == main_pids()  # --check restarted nothing
    out, totals = under_traffic(ha, "upgrade", "playbooks/upgrade.yml", *ha["args"], *new)
    assert_no_failed_request(totals)
    after = main_pids()
    assert all(after[h] != before[h] for h in ENGINES), (before, after)
    # Every engine now runs the plan's new argv, and nothing else drifted.
    status = playbook("playbooks/status.yml", *ha["args"], *new)
    table = status.stdout.split("HOST ", 1)[1].split("TASK", 1)[0]
    rows = [line.split() for line in table.splitlines() if line.strip().startswith("k3-sb-")]
    engines = [r for r in rows if r[0] in ENGINES]
    assert len(engines) == 4 and all(r[6] == "plan" and r[7] == "plan" for r in engines), table
    # Run again: nothing changes, nothing restarts.
    again = playbook("playbooks/upgrade.yml", *ha["args"], *new)
    assert "nothing changes" in again.stdout and main_pids() == after
