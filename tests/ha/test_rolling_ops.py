"""Day-two operations on the HA sandbox under client load: no request may fail.

Real test hosts (tools/sandbox.sh with tools/sandbox-ha-hosts.txt), the real vllm-router in P/D
mode (--enable-igw) in front of two prefill and two decode engines of the real vLLM (CPU build),
over SSH with systemd. While each operation runs, the real ``vllm bench serve`` sends rounds of
short chat requests, 4 a second and at most 4 at once, through the front door and the router
without a pause between rounds (tests/helpers/traffic.py: one load generator for the module, held
between operations); each test asserts that none of the operation's requests failed and
that the operation really happened (every engine's process replaced, the new argv running). The
module deploys the HA sandbox once (make sandbox-ha) and removes it at its end. Needs root.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time

import pytest
import yaml
from conftest import ROOT, VENV_BIN, ansible_env
from helpers.ansible_run import ansible_playbook
from helpers.sandbox_run import claim_hosts, release_hosts, run
from helpers.secured_sandbox import SANDBOX_CA, request
from helpers.traffic import Traffic

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability._metrics import metric_sum

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox needs root")

INVENTORY = ROOT / "inventories" / "sandbox-ha"
HOSTS = {
    "K3SB_HOSTS_FILE": str(ROOT / "tools" / "sandbox-ha-hosts.txt"),
    "K3SB_INVENTORY": str(INVENTORY / "hosts.yml"),
}
ENGINES = {
    "k3-ha-prefill": "k3-prefill",
    "k3-ha-prefill2": "k3-prefill",
    "k3-ha-decode": "k3-decode",
    "k3-ha-decode2": "k3-decode",
}
# The HA sandbox's own network (10.77.1.0/24, bridge k3sb1): it runs beside the default sandbox's.
FRONT_DOOR = "https://10.77.1.11:8443"
ROUTER = "http://10.77.1.11:8000"  # behind the front door: the admin key only
MODEL = ROOT / ".cache" / "sandbox" / "models" / "tiny-llama"


@pytest.fixture(scope="module")
def ha(tmp_path_factory):
    secrets_dir = tmp_path_factory.mktemp("secrets")
    args = subprocess.run(
        ["tools/sandbox_secrets.sh", str(secrets_dir)], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    # A plan folder of its own: the other suites run beside this one (make test).
    args += ["-e", "k3_plan_dir=%s" % tmp_path_factory.mktemp("plan")]
    vault = yaml.safe_load(
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
        ).stdout
    )
    run(ROOT / ".venv" / "vllm" / "bin" / "python", "tools/tiny_model.py", str(MODEL))
    claim_hosts("ha", lambda: run("tools/sandbox.sh", "down", check=False, env=HOSTS))
    run("tools/sandbox.sh", "up", env=HOSTS)
    # One load generator for the module, held between operations (it imports vLLM meanwhile).
    load = Traffic(
        FRONT_DOOR, "kimi-k3-sandbox", MODEL, tmp_path_factory.mktemp("traffic"), key=vault["k3_api_key"], ca=SANDBOX_CA
    )
    load.start()
    try:
        playbook("site.yml", *args)
        # extra: the variables the last upgrade ran with (what the engines run now).
        # key: a client's, through the front door; admin: the router's (management, behind the door).
        yield {
            "args": args,
            "key": vault["k3_api_key"],
            "admin": vault["k3_admin_api_key"],
            "load": load,
            "extra": [],
        }
    finally:
        code = load.stop()
        release_hosts("ha")
    assert code == 0, (load.result_dir / "rounds.log").read_text()[-3000:]


def playbook(name, *args, check=True):
    return ansible_playbook(name, *args, inventory=INVENTORY, check=check)


def unit_pid(host, unit):
    """A unit's MainPID (0: not running), read over SSH."""
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
    return int(proc.stdout.strip().splitlines()[-1])


def main_pids():
    """Each engine's MainPID."""
    return {host: unit_pid(host, unit) for host, unit in ENGINES.items()}


def under_traffic(ha, name, *args, expect_failure=False):
    """Run a playbook while vllm bench serve sends requests through the router; its output and the totals."""
    with ha["load"].window() as totals:
        started = time.monotonic()
        try:
            out = playbook(*args, check=False)
        finally:
            took = time.monotonic() - started
    assert (out.returncode != 0) == expect_failure, out.stdout[-6000:] + out.stderr[-3000:]
    print("%s: %.0f s, %s" % (name, took, {k: v for k, v in totals.items() if k != "broken"}))
    return out, totals


def status_rows(output):
    """The rows of status.yml's table, by column name."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:2] == ["HOST", "SERVICE"] and "ARGV" in line)
    header = lines[start].split()
    rows = []
    for line in lines[start + 1 :]:
        cells = line.split()
        if len(cells) != len(header):
            break
        rows.append(dict(zip(header, cells, strict=True)))
    return rows


def assert_no_failed_request(totals):
    assert not totals["broken"], totals["broken"]
    assert totals["failed"] == 0, totals["errors"][:5]
    assert totals["completed"] >= 40 and totals["rounds"] >= 2, totals


def test_restart_replaces_every_engine_and_fails_no_request(ha):
    """Two groups at a time (restart_serial=2): a prefill and a decode in each batch, so that each role
    keeps one group serving. The upgrade below rolls the same way; one group at a time (the default)
    is the batching of tests/unit/test_rolling.py and of the single changed group below."""
    before = main_pids()
    out, totals = under_traffic(ha, "restart", "playbooks/restart.yml", *ha["args"], "-e", "restart_serial=2")
    assert_no_failed_request(totals)
    after = main_pids()
    assert all(after[h] and after[h] != before[h] for h in ENGINES), (before, after)
    rolled = re.search(
        r"restarted 4 replica group\(s\) in 2 batch\(es\): ([\w./-]+ \+ [\w./-]+) -> ([\w./-]+ \+ [\w./-]+)",
        " ".join(out.stdout.split()),
    )
    assert rolled, out.stdout[-3000:]
    assert [sorted(batch.split(" + ")) for batch in rolled.groups()] == [
        ["k3-ha-decode/decode", "k3-ha-prefill/prefill"],
        ["k3-ha-decode2/decode", "k3-ha-prefill2/prefill"],
    ], rolled.group(0)
    # No outage to confirm: every role has two groups and the router takes workers back at runtime.
    assert "This restart stops serving" not in out.stdout


def test_upgrade_rolls_a_changed_engine_parameter_onto_every_engine_and_fails_no_request(ha):
    new = ["-e", '{"k3_vllm_args": [{"--shutdown-timeout": 30}]}']
    dry = playbook("playbooks/upgrade.yml", *ha["args"], *new, "--check")
    assert "Replica groups to restart: k3-ha-prefill/prefill" in dry.stdout, dry.stdout[-3000:]
    assert "would restart (--check)" in dry.stdout
    before = main_pids()
    assert before == main_pids()  # --check restarted nothing
    out, totals = under_traffic(ha, "upgrade", "playbooks/upgrade.yml", *ha["args"], *new, "-e", "restart_serial=2")
    assert_no_failed_request(totals)
    assert "in 2 batch(es)" in " ".join(out.stdout.split()), out.stdout[-3000:]
    after = main_pids()
    assert all(after[h] != before[h] for h in ENGINES), (before, after)
    # Every engine now runs the plan's new argv, and nothing else drifted.
    status = playbook("playbooks/status.yml", *ha["args"], *new)
    rows = status_rows(status.stdout)
    engines = [r for r in rows if r["HOST"] in ENGINES]
    assert len(engines) == 4 and all(r["ARGV"] == "plan" and r["FILES"] == "plan" for r in engines), rows
    # Run again: nothing changes, nothing restarts.
    again = playbook("playbooks/upgrade.yml", *ha["args"], *new)
    assert "nothing changes" in again.stdout and main_pids() == after
    ha["extra"] = new


def test_a_group_that_does_not_come_back_stops_the_roll_with_its_journal_and_the_others_serve(ha):
    """k3-ha-prefill2's engine is given a logging configuration that does not exist: it exits at start."""
    bad = INVENTORY / "host_vars" / "k3-ha-prefill2.yml"
    bad.parent.mkdir(exist_ok=True)
    bad.write_text("---\nk3_env:\n  VLLM_LOGGING_CONFIG_PATH: /nonexistent/k3-logging.json\n")
    before = main_pids()
    try:
        out, totals = under_traffic(
            ha,
            "broken",
            "playbooks/upgrade.yml",
            *ha["args"],
            *ha["extra"],
            # The engine exits at start, which the wait sees at once; the timeout only bounds a start
            # slowed by the other suites on the cores (make test runs them side by side).
            "-e",
            "restart_health_timeout=180",
            expect_failure=True,
        )
    finally:
        bad.unlink()
    assert_no_failed_request(totals)
    text = out.stdout + out.stderr
    (ha["load"].result_dir / "broken-upgrade.log").write_text(text)
    assert "Replica groups to restart: k3-ha-prefill2/prefill" in re.sub(r"\s+", " ", text), text[-3000:]
    # The failed task is the health wait, delegated to the host that did not come back.
    failures = [line for line in text.splitlines() if re.match(r"(fatal|failed): \[", line)]
    assert any("k3-ha-prefill2" in line for line in failures), failures or text[-3000:]
    assert "Could not load logging config" in text, text[-3000:]  # its journal's tail
    after = main_pids()
    assert all(after[h] == before[h] for h in ENGINES if h != "k3-ha-prefill2"), (before, after)
    assert "http://10.77.1.16:8100" not in router_workers(ha)
    # The inventory fixed, the next upgrade brings it back.
    healed, totals = under_traffic(ha, "healed", "playbooks/upgrade.yml", *ha["args"], *ha["extra"])
    assert_no_failed_request(totals)
    assert router_workers(ha)["http://10.77.1.16:8100"]["is_healthy"]


def router_workers(ha):
    status, body = request(ROUTER + "/workers", ha["admin"])
    assert status == 200, body
    return {w["url"]: w for w in json.loads(body)["workers"]}


def without_decode2(tmp_path):
    """The inventory after the operator took k3-ha-decode2 out of the decode group."""
    inv = tmp_path / "inventory"
    shutil.copytree(INVENTORY, inv)
    hosts = yaml.safe_load((inv / "hosts.yml").read_text())
    del hosts["all"]["children"]["decode"]["hosts"]["k3-ha-decode2"]
    (inv / "hosts.yml").write_text(yaml.safe_dump(hosts))
    return inv


def test_remove_node_then_scale_take_a_decode_out_and_back_and_fail_no_request(ha, tmp_path):
    extra = ha["extra"]  # what the engines run now
    decode2 = "http://10.77.1.17:8200"
    before = main_pids()
    router_pid = unit_pid("k3-ha-front", "k3-router")
    refused = playbook("playbooks/remove_node.yml", *ha["args"], *extra, "-e", "node=k3-ha-front", check=False)
    assert refused.returncode != 0 and "k3-ha-front runs no engine of the plan" in refused.stdout, refused.stdout[
        -2000:
    ]

    out, totals = under_traffic(
        ha, "remove", "playbooks/remove_node.yml", *ha["args"], *extra, "-e", "node=k3-ha-decode2"
    )
    assert_no_failed_request(totals)
    assert "removed k3-ha-decode2 (k3-ha-decode2/decode)" in re.sub(r"\s+", " ", out.stdout), out.stdout[-3000:]
    assert decode2 not in router_workers(ha)
    gone = run(
        VENV_BIN / "ansible",
        "k3-ha-decode2",
        "-i",
        INVENTORY,
        "-m",
        "ansible.builtin.stat",
        "-a",
        "path=/etc/systemd/system/k3-decode.service",
    )
    assert re.search(r'"?exists"?: false', gone.stdout), gone.stdout
    kept = {h: p for h, p in main_pids().items() if h != "k3-ha-decode2"}
    assert kept == {h: p for h, p in before.items() if h != "k3-ha-decode2"}
    assert unit_pid("k3-ha-front", "k3-router") == router_pid
    # The operator takes it out of the inventory: status is clean on what is left.
    smaller = without_decode2(tmp_path)
    status = ansible_playbook("playbooks/status.yml", *ha["args"], *extra, inventory=smaller)
    # (k3-ha-front twice: the router and the front door.)
    assert sorted(r["HOST"] for r in status_rows(status.stdout)) == [
        "k3-ha-decode",
        "k3-ha-front",
        "k3-ha-front",
        "k3-ha-prefill",
        "k3-ha-prefill2",
    ], status.stdout[-3000:]

    # Back into the inventory's decode group: scale.yml makes it join, nothing else restarts.
    out, totals = under_traffic(ha, "scale", "playbooks/scale.yml", *ha["args"], *extra, "-e", "node=k3-ha-decode2")
    assert_no_failed_request(totals)
    assert "added k3-ha-decode2 (k3-ha-decode2/decode)" in re.sub(r"\s+", " ", out.stdout), out.stdout[-3000:]
    workers = router_workers(ha)
    assert workers[decode2]["is_healthy"] and workers[decode2]["worker_type"] == "decode", workers
    after = main_pids()
    assert after["k3-ha-decode2"] and all(after[h] == kept[h] for h in kept), (kept, after)
    assert unit_pid("k3-ha-front", "k3-router") == router_pid
    # The new host serves: requests through the router reach it.
    for _unused in range(8):
        assert (
            request(
                FRONT_DOOR + "/v1/completions", ha["key"], {"model": "kimi-k3-sandbox", "prompt": "hi", "max_tokens": 2}
            )[0]
            == 200
        )
    status, metrics = request(decode2 + "/metrics")
    assert status == 200 and metric_sum(metrics, "vllm:request_success_total") > 0
