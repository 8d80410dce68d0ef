"""Faults on the real sandbox cluster: a service that fails to start, a stopped engine, and healing.

Real test hosts (tools/sandbox.sh), real vLLM, vllm-router and MetaService, real
systemd and SSH. Needs root; the deployed sandbox is tests/helpers/cluster_sandbox.py's.
"""

from __future__ import annotations

import json
import os
import re

import pytest
from conftest import ROOT
from helpers.ansible_run import ansible_playbook
from helpers.sandbox_run import HOST_VARS, INVENTORY, adhoc, main_pids, on, playbook, recap, systemctl

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox needs root")
# Each test ends with the converging site.yml run it checks; the weights test touches no service.
LEAVES_CONVERGED = True


def test_a_stopped_decode_and_a_stopped_follower_fail_verify_naming_both_and_site_heals_them(cluster):
    systemctl("k3-sb-decode", "stop", "k3-decode")
    systemctl("k3-sb-dp1", "stop", "k3-engine")
    out = playbook("playbooks/verify.yml", check=False)
    text = out.stdout + out.stderr
    assert out.returncode != 0
    assert "fatal: [k3-sb-decode]" in text
    assert "service decode (unit k3-decode) is not running" in text
    assert "--- journal" in text and "Stopped k3-decode.service" in text
    assert "fatal: [k3-sb-dp1]" in text and "service engine (unit k3-engine) is not running" in text
    # One run heals both, limited to their groups (the plan is still the whole deployment's). A
    # follower cannot rejoin a running head: node 0, in the limit, is restarted with it.
    healed = playbook("site.yml", "--limit", "engine:decode")
    counts = recap(healed.stdout)
    assert sorted(counts) == ["k3-sb-decode", "k3-sb-dp0", "k3-sb-dp1"], healed.stdout[-3000:]
    assert all(counts[h]["changed"] >= 1 for h in counts), counts
    assert "k3-sb-dp0/engine rank 1" in healed.stdout
    # The requests still go from the controller through the endpoint, under --limit too.
    assert "KV cache moved" in healed.stdout


def test_service_that_fails_to_start_fails_with_journal_then_converges(cluster):
    HOST_VARS.mkdir(exist_ok=True)
    bad = HOST_VARS / "k3-sb-prefill.yml"
    # A context longer than the model's positions: vLLM refuses it at start-up.
    bad.write_text("---\nk3_vllm_args:\n  - --max-model-len: 999999\n")
    try:
        out = playbook("site.yml", check=False)
    finally:
        bad.unlink()
    text = out.stdout + out.stderr
    assert out.returncode != 0
    assert "fatal: [k3-sb-prefill]" in text
    assert re.search(r"service prefill \(unit k3-prefill\) (has failed|is not running)", text)
    assert "--- journal" in text and "max_model_len" in text.replace("max-model-len", "max_model_len")
    # The run stopped there: the router stage did not start in front of a broken prefill.
    assert "PLAY [Router and proxy that need healthy engines" not in text
    fixed = playbook("site.yml")
    assert recap(fixed.stdout)["k3-sb-prefill"]["changed"] >= 1
    assert "KV cache moved" in fixed.stdout
    again = playbook("site.yml")
    assert all(v["changed"] == 0 for v in recap(again.stdout).values()), again.stdout[-3000:]


def test_weights_that_differ_between_two_hosts_are_reported_naming_both(cluster):
    model = ROOT / ".cache" / "sandbox" / "models" / "tiny-llama"
    for host in ("k3-sb-dp0", "k3-sb-dp1"):
        adhoc(host, "ansible.builtin.copy", "src=%s/ dest=/var/tmp/k3-weights/ remote_src=true mode=preserve" % model)
    adhoc("k3-sb-dp1", "ansible.builtin.copy", "dest=/var/tmp/k3-weights/config.json content='{}'")
    args = ("--tags", "prerequisites", "--limit", "engine,localhost")
    args += ("-e", '{"model_weights_paths": ["/var/tmp/k3-weights"]}')
    out = ansible_playbook("site.yml", *args, inventory=INVENTORY, check=False)
    assert out.returncode != 0
    assert "/var/tmp/k3-weights differs between k3-sb-dp0 and k3-sb-dp1: config.json" in out.stdout
    # The same revision on both passes.
    adhoc(
        "k3-sb-dp1",
        "ansible.builtin.copy",
        "src=%s/config.json dest=/var/tmp/k3-weights/config.json remote_src=true" % model,
    )
    assert ansible_playbook("site.yml", *args, inventory=INVENTORY).returncode == 0


def test_a_host_whose_checkpoint_copy_is_gone_gets_it_back_from_the_others_by_bittorrent(cluster):
    """The sandbox fetches its checkpoint from its hub (olah on k3-sb-mon) once, into each engine host's
    own folder. A copy removed from one host: --check names it and moves nothing; a run while the host
    has no room names it and moves nothing; the next run brings
    it from a host that holds it (a seed, by BitTorrent: the hub is not asked), checked against the
    hub's hashes, without restarting any service; the run after that changes nothing."""
    model = "/srv/k3-models/tiny-llama"
    before = main_pids({"k3-sb-dp1": "k3-engine", "k3-sb-decode": "k3-decode"})
    on("k3-sb-dp1", "rm -rf %s" % model)
    args = ("--tags", "prerequisites")
    checked = playbook("site.yml", "--check", *args)
    assert recap(checked.stdout)["k3-sb-dp1"]["changed"] >= 1
    assert "model (%s) would come from k3-sb-" % model in checked.stdout
    assert on("k3-sb-dp1", "test -e %s; echo $?" % model, check=False).stdout.strip() == "1"
    # No room there: named with the host and the sizes before anything moves (the seed's tracker
    # never starts); the run after it, with room, brings the copy.
    on("k3-sb-dp1", "mount -t tmpfs -o size=64k tmpfs /srv/k3-models")
    try:
        full = playbook("site.yml", *args, check=False)
    finally:
        on("k3-sb-dp1", "umount /srv/k3-models")
    assert full.returncode != 0 and "Download by BitTorrent" not in full.stdout
    assert re.search(r"k3-sb-dp1: %s \(model\) needs \d+ bytes and its filesystem has \d+ free" % model, full.stdout)
    assert "Nothing was fetched or moved." in full.stdout
    brought = playbook("site.yml", *args)
    counts = recap(brought.stdout)
    assert counts["k3-sb-dp1"]["changed"] >= 1 and "Download by BitTorrent" in brought.stdout
    # Its progress as it went, in the output and in the transfer's progress log on the host.
    assert re.search(r"model: [\d.]+ k?B of [\d.]+ kB \(\d+ %\)", brought.stdout), brought.stdout[-3000:]
    readings = on("k3-sb-dp1", "cat /var/lib/kimi-k3/fanout/model.progress").stdout.splitlines()
    assert readings and json.loads(readings[-1])["total"] > 0
    # Only the host without it received it; the hub was not asked again.
    assert "changed: [k3-sb-dp0] => (item=model" not in brought.stdout
    stamp = on("k3-sb-dp1", "cat %s/.k3-source.json" % model).stdout
    assert '"repo": "k3-sandbox/tiny-llama"' in stamp and '"sha256":' in stamp
    same = on("k3-sb-dp0", "cd %s && sha256sum *" % model).stdout
    assert on("k3-sb-dp1", "cd %s && sha256sum *" % model).stdout == same
    # The transfer's tracker and seeder are gone, no service restarted.
    assert on("k3-sb-dp0", "systemctl list-units --all --no-legend 'k3-fanout*'").stdout.strip() == ""
    assert main_pids({"k3-sb-dp1": "k3-engine", "k3-sb-decode": "k3-decode"}) == before
    again = playbook("site.yml", *args)
    assert all(c["changed"] == 0 for c in recap(again.stdout).values()), again.stdout[-3000:]
