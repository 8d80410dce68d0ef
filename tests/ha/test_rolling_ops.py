"""Day-two operations on the HA sandbox under client load: no request may fail.

Real test hosts (tools/sandbox.sh with tools/sandbox-ha-hosts.txt), the real vllm-router in P/D
mode (--enable-igw) in front of two prefill and two decode engines of the real vLLM (CPU build),
over SSH with systemd. While each operation runs, the real ``vllm bench serve`` sends rounds of
short chat requests, 2 a second and at most 4 at once, through the front door and the router
without a pause between rounds (tests/helpers/traffic.py: one load generator for the module, held
between operations); each test asserts that none of the operation's requests failed and
that the operation really happened (every engine's process replaced, the new argv running). The
module deploys the HA sandbox once (make sandbox-ha) and removes it at its end. Needs root.

The upgrades run with their canary (one group of each role) and its gates; the tests go in order:
restart, an upgrade paused after its canary and resumed, a canary that cannot start and one that
fails a gate (each back on its release before by itself), rollback.yml, then remove_node and scale.
The two canaries that fail are one decode group (canary_groups): going back is the same for a group
of any role, and each engine start is some 20 CPU-seconds of the two cores.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import time

import pytest
import yaml
from conftest import ROOT, VENV_BIN, ansible_env
from helpers.ansible_run import ansible_playbook
from helpers.sandbox_run import claim_hosts, on, release_hosts, run
from helpers.sandbox_run import main_pids as pids_of
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
    # The rolling operations wait 1 s, not 5, for requests the router sent before it let a group go:
    # on the sandbox's bridge they arrive within milliseconds, and the drain that follows waits for
    # every request the engines hold. Twelve batches roll here; no request may fail all the same.
    args += ["-e", "restart_drain_grace=1"]
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
    # One load generator for the module, held between operations (it imports vLLM meanwhile). Two
    # requests a second still send 30 or more while an engine restarts (15-20 s here), for 0.18 cores
    # of load against 0.40 at four a second (measured on the default sandbox, 2026-12-06): the
    # operations they are counted against run on the same two cores.
    load = Traffic(
        FRONT_DOOR, "kimi-k3-sandbox", MODEL, tmp_path_factory.mktemp("traffic"), key=vault["k3_api_key"],
        ca=SANDBOX_CA, prompts=20, rate=2,
    )  # fmt: skip
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
    """A unit's MainPID (0: not running)."""
    return pids_of({host: unit}, INVENTORY)[host]


def main_pids():
    """Each engine's MainPID."""
    return pids_of(ENGINES, INVENTORY)


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


def squashed(text):
    return re.sub(r"\s+", " ", text)


def releases(ha, *extra, clean=True):
    """The inventory's plan's release and each engine's (RELEASE, ARGV, FILES), from status.yml (which
    fails unless ``clean``: engines off the inventory's plan are problems)."""
    out = ansible_playbook("playbooks/status.yml", *ha["args"], *extra, inventory=INVENTORY, check=False)
    assert (out.returncode == 0) == clean, out.stdout[-3000:]
    plan = re.search(r"The inventory's plan is release (\w+)", out.stdout)
    assert plan, out.stdout[-3000:]
    rows = {r["HOST"]: (r["RELEASE"], r["ARGV"], r["FILES"]) for r in status_rows(out.stdout) if r["HOST"] in ENGINES}
    assert len(rows) == 4, out.stdout[-3000:]
    return plan.group(1), rows


CANARY = ("k3-ha-prefill", "k3-ha-decode")
NEW = ["-e", '{"k3_vllm_args": [{"--shutdown-timeout": 30}]}']


def accuracy_smoke(tmp_path):
    """The -e file of the canary's accuracy smoke: two ToolCall items against each canary engine."""
    datasets = tmp_path / "datasets"
    run(ROOT / ".venv" / "eval" / "bin" / "python", "tools/eval_datasets.py", str(datasets))
    settings = {
        "gate_accuracy": True,
        "gate_accuracy_limit": 2,
        "gate_accuracy_gates": {"toolcall": 0},
        "evaluate_benchmarks": ["toolcall"],
        "evaluate_datasets": {"toolcall": str(datasets / "toolcall" / "toolcall_samples.jsonl")},
        "evaluate_max_tokens": {"toolcall": 64},
        "evaluate_check_reasoning": False,
        "evaluate_runs_dir": str(tmp_path / "evaluations"),
    }
    path = tmp_path / "accuracy.json"
    path.write_text(json.dumps(settings))
    return path


def test_an_upgrade_paused_after_its_canary_resumes_and_fails_no_request(ha, tmp_path):
    """The canary (one group of each role) rolls first and passes its gates (the short benchmark against
    the two groups still on the release before, and the accuracy smoke: a few evaluation items straight
    to each canary engine); pause_after=1 stops there, the next run resumes."""
    old, _rows = releases(ha)
    smoke = accuracy_smoke(tmp_path)
    before = main_pids()
    dry = playbook("playbooks/upgrade.yml", *ha["args"], *NEW, "--check")
    assert "The canary: k3-ha-prefill/prefill + k3-ha-decode/decode" in squashed(dry.stdout), dry.stdout[-3000:]
    assert "would restart (--check)" in dry.stdout
    assert main_pids() == before  # --check restarted nothing
    out, totals = under_traffic(
        ha, "upgrade-canary", "playbooks/upgrade.yml", *ha["args"], *NEW, "-e", "pause_after=1", "-e", "@%s" % smoke
    )
    assert_no_failed_request(totals)
    # The evaluation ran against each canary engine itself, not through the router.
    scores = [json.loads(p.read_text()) for p in sorted((tmp_path / "evaluations").glob("canary-*/scores.json"))]
    assert sorted(s["endpoint"] for s in scores) == ["http://10.77.1.14:8100", "http://10.77.1.15:8200"], scores
    for score in scores:
        (toolcall,) = score["scores"]
        assert (toolcall["status"], toolcall["samples"], toolcall["completed"]) == ("success", 2, 2), toolcall
    text = squashed(out.stdout)
    assert "the canary k3-ha-prefill/prefill + k3-ha-decode/decode passed its gates" in text, text[-3000:]
    # The canary's figures beside the release before's (k3-ha-prefill2 and k3-ha-decode2).
    assert re.search(r"decode ttft_ms\.p50: canary [\d.]+ ms, release before [\d.]+ ms", text), text[-3000:]
    assert "Paused: k3-ha-prefill2/prefill, k3-ha-decode2/decode keep the release they run" in text
    paused = main_pids()
    assert all(paused[h] != before[h] for h in CANARY) and all(
        paused[h] == before[h] for h in ENGINES if h not in CANARY
    )
    new, rows = releases(ha, *NEW, clean=False)
    assert new != old
    assert {h: rows[h] for h in CANARY} == {h: (new, "plan", "plan") for h in CANARY}, rows
    # The paused groups keep the release they run, and owe no restart (their staged files undone).
    assert {h: rows[h] for h in ENGINES if h not in CANARY} == {
        h: (old, "DIFFERS", "DRIFT") for h in ENGINES if h not in CANARY
    }, rows

    out, totals = under_traffic(ha, "upgrade-resume", "playbooks/upgrade.yml", *ha["args"], *NEW)
    assert_no_failed_request(totals)
    assert "Replica groups to restart: k3-ha-prefill2/prefill + k3-ha-decode2/decode" in squashed(out.stdout)
    after = main_pids()
    assert all(after[h] == paused[h] for h in CANARY) and all(after[h] != paused[h] for h in ENGINES if h not in CANARY)
    assert releases(ha, *NEW) == (new, {h: (new, "plan", "plan") for h in ENGINES})
    # Run again: nothing changes, nothing restarts.
    again = playbook("playbooks/upgrade.yml", *ha["args"], *NEW)
    assert "nothing changes" in again.stdout and main_pids() == after
    ha["extra"], ha["releases"] = NEW, (old, new)


# The canary of the upgrades that fail: one group (a decode), named with canary_groups.
FAILING = ["-e", '{"canary_groups": ["k3-ha-decode/decode"]}']


def assert_canary_back_and_the_others_untouched(ha, before, out, reason):
    text = out.stdout + out.stderr
    (ha["load"].result_dir / ("%s.log" % reason.split()[0])).write_text(text)
    said = squashed(text)
    assert "upgrade stopped: the canary k3-ha-decode/decode failed" in said, text[-4000:]
    assert reason in said, text[-4000:]
    assert "Back on the release before and serving: k3-ha-decode/decode" in said
    after = main_pids()
    assert after["k3-ha-decode"] != before["k3-ha-decode"], (before, after)
    assert all(after[h] == before[h] for h in ENGINES if h != "k3-ha-decode"), (before, after)
    workers = router_workers(ha)
    assert len(workers) == 4 and all(w["is_healthy"] for w in workers.values()), workers
    _old, new = ha["releases"]
    assert releases(ha, *ha["extra"]) == (new, {h: (new, "plan", "plan") for h in ENGINES})


def test_a_canary_that_cannot_start_goes_back_by_itself_and_the_others_are_untouched(ha):
    """Every engine is given a logging configuration that does not exist: the canary exits at start."""
    bad = ["-e", '{"k3_env": {"VLLM_LOGGING_CONFIG_PATH": "/nonexistent/k3-logging.json"}}']
    before = main_pids()
    out, totals = under_traffic(
        ha,
        "broken",
        "playbooks/upgrade.yml",
        *ha["args"],
        *ha["extra"],
        *bad,
        *FAILING,
        # The engine exits at start, which the wait sees at once; the timeout only bounds a start
        # slowed by the other suites on the cores (make test runs them side by side).
        "-e",
        "restart_health_timeout=180",
        expect_failure=True,
    )
    assert_no_failed_request(totals)
    assert "Could not load logging config" in out.stdout  # its journal's tail
    assert_canary_back_and_the_others_untouched(ha, before, out, 'failed at "Healthy again')


def test_a_canary_that_fails_a_gate_goes_back_by_itself(ha):
    """A p99 TTFT of 1 ms: no engine meets it."""
    newer = ["-e", '{"k3_vllm_args": [{"--shutdown-timeout": 31}]}', "-e", "gate_ttft_p99_ms=1"]
    before = main_pids()
    out, totals = under_traffic(ha, "gate", "playbooks/upgrade.yml", *ha["args"], *newer, *FAILING, expect_failure=True)
    assert_no_failed_request(totals)
    assert re.search(r"point decode: ttft_ms\.p99 = [\d.]+ ms, above the threshold 1 ms", out.stdout), out.stdout[
        -3000:
    ]
    assert_canary_back_and_the_others_untouched(ha, before, out, "the canary failed its gates")


def test_rollback_returns_every_group_to_the_release_before(ha):
    old, new = ha["releases"]
    before = main_pids()
    dry = playbook("playbooks/rollback.yml", *ha["args"], *ha["extra"], "--check")
    assert "k3-ha-decode2/decode: back to release %s" % old in dry.stdout and main_pids() == before
    out, totals = under_traffic(ha, "rollback", "playbooks/rollback.yml", *ha["args"], "-e", "restart_serial=2")
    assert_no_failed_request(totals)
    after = main_pids()
    assert all(after[h] != before[h] for h in ENGINES), (before, after)
    # The inventory without the upgrade's variables is the release before: every engine runs it.
    assert releases(ha) == (old, {h: (old, "plan", "plan") for h in ENGINES})
    # Run again: the release it left no longer counts, nothing goes back further, nothing restarts.
    again = playbook("playbooks/rollback.yml", *ha["args"])
    assert "k3-ha-prefill/prefill: stays on release %s" % old in again.stdout and main_pids() == after
    ha["extra"] = []


def router_workers(ha):
    status, body = request(ROUTER + "/workers", ha["admin"])
    assert status == 200, body
    return {w["url"]: w for w in json.loads(body)["workers"]}


def exists(host, path):
    """Whether ``path`` exists on ``host``, read over SSH."""
    return on(host, "test -e %s" % shlex.quote(path), check=False, inventory=INVENTORY).returncode == 0


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
    # Its unit goes, and the releases kept of its files with it.
    for path in ("/etc/systemd/system/k3-decode.service", "/var/lib/kimi-k3/releases/decode"):
        assert not exists("k3-ha-decode2", path), path
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
