"""The plan playbook end to end: real ansible-playbook, real inventories, on the controller only."""

from __future__ import annotations

import html
import json
import shutil

import pytest
from conftest import EXAMPLES, ROOT, example_names
from helpers.ansible_run import ansible_playbook


def playbook(*args, inventory, check=True):
    return ansible_playbook(ROOT / "playbooks" / "plan.yml", *args, inventory=inventory, check=check, timeout=None)


def recap_changed(output):
    line = [x for x in output.splitlines() if x.startswith("localhost") and "changed=" in x][-1]
    return int(line.split("changed=")[1].split()[0])


@pytest.mark.parametrize("name", example_names())
def test_every_example_plans_and_rerun_changes_nothing(name, tmp_path):
    dest = tmp_path / "plan"
    first = playbook("-e", "k3_plan_dir=%s" % dest, inventory=EXAMPLES / name / "hosts.yml")
    assert recap_changed(first.stdout) == 1
    plan = json.loads((dest / "plan.json").read_text())
    services = [(h, s["name"]) for h, d in plan["hosts"].items() for s in d["services"]]
    assert services
    for host, svc in services:
        script = dest / "scripts" / host / ("%s.sh" % svc)
        assert script.read_text().startswith("#!/usr/bin/env bash\n")
        assert script.stat().st_mode & 0o111
    summary = (dest / "summary.txt").read_text()
    assert all(host in summary for host, _unused in services)
    # The page a person reads: every host, with the picture where the controller has Graphviz.
    report = (dest / "report.html").read_text()
    assert all(html.escape(host) in report for host, _unused in services)
    assert report.count("<svg") == (1 if shutil.which("dot") else 0)
    second = playbook("-e", "k3_plan_dir=%s" % dest, inventory=EXAMPLES / name / "hosts.yml")
    assert recap_changed(second.stdout) == 0


def test_check_mode_writes_nothing_and_diff_shows_changes(tmp_path):
    dest = tmp_path / "plan"
    out = playbook("-e", "k3_plan_dir=%s" % dest, "--check", "--diff", inventory=EXAMPLES / "nvidia-tp8" / "hosts.yml")
    assert recap_changed(out.stdout) == 1
    assert not dest.exists()
    assert "+++ after: %s/plan.json" % dest in out.stdout


def test_changed_inventory_rewrites_and_removes_stale_scripts(tmp_path):
    dest = tmp_path / "plan"
    playbook("-e", "k3_plan_dir=%s" % dest, inventory=EXAMPLES / "mi355x-pd-1p3d-c24" / "hosts.yml")
    assert (dest / "scripts" / "mi355x-d3" / "decode.sh").exists()
    inv = tmp_path / "hosts.yml"
    shutil.copy(EXAMPLES / "mi355x-pd-1p2d-c24" / "hosts.yml", inv)
    out = playbook("-e", "k3_plan_dir=%s" % dest, inventory=inv)
    assert recap_changed(out.stdout) == 1
    assert not (dest / "scripts" / "mi355x-d3" / "decode.sh").exists()
    plan = json.loads((dest / "plan.json").read_text())
    assert sorted(plan["hosts"]) == ["mi355x-d1", "mi355x-d2", "mi355x-p1", "mi355x-router"]


def test_bad_inventory_fails_naming_host_variable_fix_and_writes_nothing(tmp_path):
    inv = tmp_path / "hosts.yml"
    text = (EXAMPLES / "mi355x-pd-1p1d-c48" / "hosts.yml").read_text()
    text = text.replace("ansible_host: 192.0.2.10", "ansible_host: 192.0.2.10\n          k3_ip: 0.0.0.0")
    text = text.replace("k3_concurrency: 48", "k3_concurrency: 48\n    k3_dcp_size: 3")
    inv.write_text(text)
    dest = tmp_path / "plan"
    out = playbook("-e", "k3_plan_dir=%s" % dest, inventory=inv, check=False)
    assert out.returncode != 0
    text = out.stdout + out.stderr
    assert "nothing was changed" in text
    assert "host mi355x-router: k3_ip: the vllm-router (discovery) address is 0.0.0.0" in text
    assert "host mi355x-p1: k3_dcp_size:" in text and "Fix: set k3_dcp_size to a divisor" in text
    assert not dest.exists()


def test_site_yml_from_repo_root_plans(tmp_path):
    dest = tmp_path / "plan"
    proc = ansible_playbook(
        "site.yml",
        "-e",
        "k3_plan_dir=%s" % dest,
        "--tags",
        "plan",
        inventory=EXAMPLES / "a3-pd-8p8d" / "hosts.yml",
        check=False,
        timeout=None,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads((dest / "plan.json").read_text())["profile"] == "ascend-a3-pd-8p8d"
