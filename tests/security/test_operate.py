"""Operating the locked-down sandbox: status.yml, collect_logs.yml's support bundle, teardown.yml.

Real test hosts, real vLLM, vllm-router and MetaService over SSH, with two API keys: the deployment
is tests/helpers/secured_sandbox.py's fixture ``deployed`` (after test_locked_down.py). The teardown runs
last and compares every host with the record made before the first site.yml. Needs root.
"""

from __future__ import annotations

import os
import re
import stat
import tarfile
import time

import pytest
from helpers.ansible_run import ansible_playbook
from helpers.sandbox_run import INVENTORY, adhoc, main_pids, on, playbook, recap
from helpers.secured_sandbox import DEPLOYMENT, host_changes, request

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox needs root")

ROUTER = "http://10.77.0.11:8000"
# The exporters: the node exporter on every host, the accelerator exporter's stand-in on the engines';
# the data-parallel group's guards beside its two members.
SERVICES = {
    "k3-sb-front": ["metaservice", "router", "front-door", "node-exporter"],
    "k3-sb-dp0": ["engine", "node-exporter", "accelerator-exporter", "engine-guard"],
    "k3-sb-dp1": ["engine", "node-exporter", "accelerator-exporter", "engine-guard"],
    "k3-sb-prefill": ["prefill", "node-exporter", "accelerator-exporter"],
    "k3-sb-decode": ["decode", "node-exporter", "accelerator-exporter"],
}


def no_key(text, deployed):
    for key in deployed["every_key"]:
        assert key not in text


def test_status_of_the_healthy_deployment_is_a_table_of_every_service(deployed):
    assert_healthy_table(playbook("playbooks/status.yml", *deployed["args"]), deployed)


def test_status_under_check_reads_the_same_healthy_table(deployed):
    """status.yml only reads: under --check it still reads every page (the accelerator exporters'
    too) and reports the same table."""
    assert_healthy_table(playbook("playbooks/status.yml", "--check", *deployed["args"]), deployed)


def assert_healthy_table(out, deployed):
    text = out.stdout + out.stderr
    no_key(text, deployed)
    rows = [line.split() for line in text.splitlines() if re.match(r"^\s+k3-sb-\S+\s+\S+\s+k3-", line)]
    found = {(r[0], r[1]) for r in rows}
    assert found == {(h, s) for h, names in SERVICES.items() for s in names}, text[-4000:]
    for row in rows:
        # STATE, ARGV (the plan's everywhere) and FILES (as the plan renders them).
        assert row[3] == "active/running" and row[6] == "plan" and row[7] == "plan", row
        no_url = row[:2] == ["k3-sb-dp1", "engine"] or row[1] == "engine-guard"
        assert row[4] == ("n/a" if no_url else "200"), row  # the follower and the guards have no URL
    # RELEASE: the release each service's files are (the plan that wrote them), none owing a restart.
    assert all(re.fullmatch(r"[0-9a-f]{12}", row[8]) for row in rows), rows
    assert re.search(r"The inventory's plan is release [0-9a-f]{12}", text), text[-3000:]
    # Versions read from the virtualenvs, without importing: vLLM, vllm-router, memcache_hybrid (the
    # exporters' programs have none to read); the accelerator exporter's devices, all healthy.
    for row in rows:
        if row[1].endswith(("-exporter", "-guard")):
            assert row[9] == "-", row
            assert " ".join(row[10:]) == ("8 healthy" if row[1] == "accelerator-exporter" else "-"), row
        else:
            assert re.fullmatch(r"\d+\.\d+\S*", row[9]) and row[10] == "-", row
    assert recap(out.stdout)["k3-sb-decode"]["changed"] == 0


def test_status_names_an_env_file_edited_by_hand_and_a_unit_the_plan_no_longer_has(deployed):
    env = "/etc/kimi-k3/decode.env"
    on("k3-sb-decode", "cp -p %s /root/decode.env.orig && echo 'VLLM_LOGGING_LEVEL=\"DEBUG\"' >> %s" % (env, env))
    on(
        "k3-sb-dp1",
        "printf '# Managed by kimi_k3.serving: old (vllm).\\n[Service]\\nExecStart=/bin/true\\n'"
        " > /etc/systemd/system/k3-old-decode.service",
    )
    try:
        out = playbook("playbooks/status.yml", *deployed["args"], check=False)
    finally:
        on("k3-sb-decode", "mv /root/decode.env.orig %s" % env)
    text = out.stdout + out.stderr
    no_key(text, deployed)
    assert out.returncode != 0
    assert "k3-sb-decode/decode: its unit, environment or configuration files differ from the plan" in text, text[
        -3000:
    ]
    assert "k3-sb-dp1: unit k3-old-decode is the collection's but not in the plan" in text
    # Only those two: every other service is as planned.
    assert "status: 2 problem(s)" in text, text[-3000:]
    # The file is back as it was: only the unit left for the teardown remains.
    again = playbook("playbooks/status.yml", *deployed["args"], check=False)
    assert "status: 1 problem(s)" in again.stdout + again.stderr
    assert "k3-sb-dp1: unit k3-old-decode" in again.stdout + again.stderr


def test_the_support_bundle_has_every_host_and_no_key(deployed, tmp_path):
    # Two fabric checks' run folders (playbooks/fabric.yml's layout): the newer one goes in.
    runs = tmp_path / "fabric-runs"
    for age, name in ((120, "20261201T000000Z"), (60, "20261202T000000Z")):
        (runs / name).mkdir(parents=True)
        (runs / name / "summary.txt").write_text("fabric check %s\n" % name)
        os.utime(runs / name, (time.time() - age, time.time() - age))
    out = playbook(
        "playbooks/collect_logs.yml", *deployed["args"], "-e", "collect_logs_dest=%s" % tmp_path,
        "-e", "collect_logs_fabric_runs=%s" % runs,
    )  # fmt: skip
    no_key(out.stdout + out.stderr, deployed)
    bundles = list(tmp_path.glob("k3-support-sandbox-cpu-*.tar.gz"))
    assert len(bundles) == 1, list(tmp_path.iterdir())
    assert stat.S_IMODE(bundles[0].stat().st_mode) == 0o600
    with tarfile.open(bundles[0]) as tar:
        members = {m.name: tar.extractfile(m).read().decode() for m in tar.getmembers() if m.isfile()}
    names = set(members)
    assert "plan/plan.json" in names and "plan/summary.txt" in names
    assert members["fabric/summary.txt"] == "fabric check 20261202T000000Z\n"
    for host, services in SERVICES.items():
        for svc in services:
            unit = "k3-%s" % svc
            assert "%s/files/etc/systemd/system/%s.service" % (host, unit) in names
            assert "%s/files/etc/kimi-k3/%s.env" % (host, svc) in names
            assert "%s/journal/%s.log" % (host, unit) in names
        for doc in ("status", "accelerators", "preflight"):
            assert "%s/%s.json" % (host, doc) in names
    # Secrets: values redacted, key files withheld, and no key anywhere.
    decode_env = members["k3-sb-decode/files/etc/kimi-k3/decode.env"]
    assert "VLLM_API_KEY=<redacted>" in decode_env and "VLLM_HOST_IP=" in decode_env
    assert members["k3-sb-front/files/etc/kimi-k3/front-door.keys.conf"].startswith("<withheld: a secret file")
    for name, text in members.items():
        for key in deployed["every_key"]:
            assert key not in text, name
    # What it holds is real: the engine's journal and metrics, the router's health, versions.
    assert "Started k3-decode.service" in members["k3-sb-decode/journal/k3-decode.log"]
    assert "vllm:" in members["k3-sb-decode/http/decode-metrics.txt"]
    # The exporters' pages (their health URL is their /metrics): the devices' state when it was taken.
    assert "npu_chip_info_health_status" in members["k3-sb-decode/http/accelerator-exporter-health.txt"]
    assert "node_filesystem_avail_bytes" in members["k3-sb-decode/http/node-exporter-health.txt"]
    assert members["k3-sb-front/http/router-health.txt"].startswith("HTTP 200")
    # vllm-router's Prometheus page is on a port of its own (29000), on its host's loopback.
    assert "vllm_router" in members["k3-sb-front/http/router-metrics.txt"]
    assert '"version": "' in members["k3-sb-decode/status.json"]
    assert '"problems": []' in members["k3-sb-decode/preflight.json"]
    # The hardware findings: the kernel's lines (the hosts share the controller's kernel) and the
    # vendor tools, which no host here has, noted as missing.
    for host in SERVICES:
        assert re.match(
            r"# (dmesg|journalctl)\b.*: \d+ of \d+ lines match|# the kernel log is not readable",
            members["%s/kernel.log" % host],
        )
    assert "command ibv-devinfo: ibv_devinfo is not on this host" in members["k3-sb-decode/missing.txt"]
    # Nothing left behind on the hosts or the controller.
    leftover = adhoc("k3-sb-decode", "ansible.builtin.find", "paths=/tmp patterns=k3-support-*")
    assert "matched: 0" in leftover.stdout


# What installing a package changes besides its own files: the package tools' bookkeeping.
# (var/backups, where dpkg-db-backup.timer copies dpkg's database at midnight, is ignored on every
# host: helpers/secured_sandbox.py NOISE.)
PACKAGE_BOOKKEEPING = (
    "var/lib/dpkg/",
    "var/lib/apt/",
    "var/log/apt/",
    "var/log/dpkg.log",
    "var/cache/debconf/",
    # The distribution's ldconfig trigger, after a package that ships libraries (aria2's).
    "etc/ld.so.cache",
)


# What nginx's maintainer scripts make besides the package's files (Debian 12's nginx-common
# postinst and update-rc.d): the default site's link, the rc links, the logs and the web root.
NGINX_INSTALL_ARTEFACTS = re.compile(
    r"etc/nginx/sites-enabled/default$|etc/rc[0-6S]\.d/[KS]\d\dnginx$|var/log/nginx(/|$)|var/www(/|$)"
)
# The engine hosts' checkpoint fan-out (roles/model_weights): aria2 and mktorrent with what they need
# from the distribution, and the folder the checkpoint is fetched into (inventories/sandbox).
ENGINE_HOSTS = ("k3-sb-dp0", "k3-sb-dp1", "k3-sb-prefill", "k3-sb-decode")
FANOUT_PACKAGES = ("aria2", "libaria2-0", "libc-ares2", "libicu72", "libxml2", "mktorrent")
FETCHED = "srv/k3-models"
# Debian 12's packages name /lib, /bin and /sbin; on the merged-/usr base image the files are under /usr.
MERGED_USR = ("lib/", "bin/", "sbin/")


def without_package(host, changes, packages, service=None):
    """``changes`` less the files of ``packages`` (installed by a role, kept by teardown as images and
    Prometheus are), what their installation made, and the package tools' bookkeeping; the package's
    own ``service``, where it has one, must be off."""
    listed = on(host, "dpkg -L %s" % " ".join(packages)).stdout
    owned = {line.strip().lstrip("/") for line in listed.splitlines() if line.strip().startswith("/")}
    owned |= {"usr/" + p for p in owned if p.startswith(MERGED_USR)}
    if service:
        state = on(host, "systemctl is-enabled %s; systemctl is-active %s" % (service, service), check=False)
        assert "disabled\ninactive" in state.stdout, state.stdout
    # dpkg -L lists every file and folder of the package (/etc and /usr among them): exact paths only.
    return {
        p: d
        for p, d in changes.items()
        if p not in owned and not p.startswith(PACKAGE_BOOKKEEPING) and not NGINX_INSTALL_ARTEFACTS.match(p)
    }


def test_an_operation_without_the_keys_is_refused_before_it_changes_anything(deployed, tmp_path):
    """restart.yml run without the vault on a deployment with keys: refused before it changes anything,
    naming the variable, every service untouched (and so is site.yml, which would take the keys away)."""
    before = {h: unit_pid(h, u) for h, u in (("k3-sb-front", "k3-router"), ("k3-sb-decode", "k3-decode"))}
    for name in ("playbooks/restart.yml", "site.yml"):
        out = ansible_playbook(name, "-e", "k3_plan_dir=%s" % tmp_path, inventory=INVENTORY, check=False)
        text = " ".join((out.stdout + out.stderr).split())
        assert out.returncode != 0, text[-2000:]
        assert "host k3-sb-front: k3_admin_api_key: the running deployment has keys" in text, text[-2000:]
        assert "/etc/kimi-k3/front-door.keys.conf" in text and "and this run has none" in text
        assert "nothing was changed" in text
        # The controller wrote the plan (into tmp_path); no host changed.
        assert all(c["changed"] == 0 for h, c in recap(out.stdout).items() if h != "localhost"), out.stdout[-2000:]
    assert {h: unit_pid(h, u) for h, u in (("k3-sb-front", "k3-router"), ("k3-sb-decode", "k3-decode"))} == before


def unit_pid(host, unit):
    return main_pids({host: unit})[host]


def test_teardown_without_confirmation_changes_nothing(deployed):
    out = playbook("playbooks/teardown.yml", *deployed["args"], check=False)
    text = out.stdout + out.stderr
    assert (
        out.returncode != 0
        and "teardown not confirmed, nothing was changed: every service of profile sandbox-cpu" in text
    ), text[-2000:]
    assert request(ROUTER + "/health", deployed["admin"])[0] == 200
    checked = playbook("playbooks/teardown.yml", "--check", *deployed["args"])
    assert recap(checked.stdout)["k3-sb-decode"]["changed"] > 0
    assert request(ROUTER + "/health", deployed["admin"])[0] == 200


def test_teardown_leaves_every_host_as_before_the_first_run(deployed):
    out = playbook("playbooks/teardown.yml", "-e", "confirm=yes", *deployed["args"])
    no_key(out.stdout + out.stderr, deployed)
    for host in DEPLOYMENT:
        before, after = deployed["before"][host], host_changes(host)
        if host == "k3-sb-front":
            before = without_package(host, before, ("nginx", "nginx-common"), "nginx")
            after = without_package(host, after, ("nginx", "nginx-common"), "nginx")
        if host in ENGINE_HOSTS:
            # The checkpoint fetched from the hub stays (as images do) unless teardown_purge, and so do
            # the BitTorrent programs that brought it.
            after = without_package(host, after, FANOUT_PACKAGES)
            after = {p: d for p, d in after.items() if not p.startswith(FETCHED)}
        added = sorted(set(after) - set(before))
        changed = sorted(p for p in set(after) & set(before) if after[p] != before[p])
        gone = sorted(set(before) - set(after))
        assert (added, changed, gone) == ([], [], []), (host, added, changed, gone)
        # No unit file of the collection's, and no unit of its loaded or running: systemd may still
        # list a removed unit's name as "not-found inactive dead" (no file, no process) until it
        # collects it, which on busy cores was seen to take minutes (the HA suite beside this one).
        units = on(
            host,
            "systemctl list-unit-files --plain --no-legend 'k3-*'; "
            "systemctl list-units --all --plain --no-legend 'k3-*'",
        ).stdout
        left = [line.split() for line in units.splitlines() if line.strip()]
        assert all(cells[1:4] == ["not-found", "inactive", "dead"] for cells in left), (host, units)
    # The monitoring host: the collection's targets, rules and dashboards are gone, Prometheus and
    # Alertmanager stopped (their packages stay, as images do, unless teardown_purge).
    left = on(
        "k3-sb-mon",
        "ls -d /etc/prometheus/kimi-k3 /etc/prometheus/kimi-k3-rules.yml /var/lib/kimi-k3/dashboards 2>&1; "
        "systemctl is-active prometheus prometheus-alertmanager",
        check=False,
    ).stdout
    assert left.count("No such file or directory") == 3 and "active\n" not in left.replace("inactive", ""), left
    again = playbook("playbooks/teardown.yml", "-e", "confirm=yes", *deployed["args"])
    assert all(c["changed"] == 0 for h, c in recap(again.stdout).items() if h != "localhost"), again.stdout[-2000:]
