"""The AWX job templates plan, verify, status and collect logs, run the way AWX runs them, on the deployed sandbox.

No AWX server runs here; what it hands to ansible-runner does (tests/helpers/awx_jobs.py): tools/awx.py
lays out each job's private data folder (the project's tracked files, the inventory as the script
AWX writes from its source, env/extravars with the survey's defaults and what the API-key
credential injects, env/cmdline), the collections of collections/requirements.yml are installed
into it as AWX's project sync does, and the real ansible-runner runs the job template's playbook
against the real test hosts over SSH. The deployment is tests/helpers/cluster_sandbox.py's (two API keys);
nothing here changes it. Needs root.
"""

from __future__ import annotations

import json
import os
import re
import tarfile
from pathlib import Path

import pytest
from helpers.awx_jobs import collection_roots, project_sync_collections, run_job
from helpers.sandbox_run import INVENTORY

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox needs root")


@pytest.fixture(scope="module")
def jobs(deployed, tmp_path_factory):
    collections = project_sync_collections(tmp_path_factory.mktemp("awx-collections"))
    root = tmp_path_factory.mktemp("awx-jobs")

    def run(operation, **extra):
        # What the API-key credential injects, and a plan folder of the job's own.
        extra = {
            "k3_api_key": deployed["keys"],
            "k3_admin_api_key": deployed["admin"],
            "k3_monitoring_password": deployed["every_key"][3],
            "k3_plan_dir": str(root / operation / "plan"),
            **extra,
        }
        proc = run_job(
            operation, root / operation / "job", INVENTORY / "hosts.yml", collections, "-e", json.dumps(extra)
        )
        text = proc.stdout + proc.stderr
        assert not any(key in text for key in deployed["every_key"]), "a key in the job's output"
        return proc, root / operation

    return run


def test_plan_and_verify_jobs_plan_the_deployment_and_prove_it_serves(jobs, deployed):
    proc, folder = jobs("plan")
    assert proc.returncode == 0, proc.stdout[-4000:]
    planned = json.loads((folder / "plan" / "plan.json").read_text())
    assert planned == json.loads((deployed["plan_dir"] / "plan.json").read_text())
    proc, folder = jobs("verify")
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert "Verify that the deployment serves" in proc.stdout and "failed=0" in proc.stdout
    roots = collection_roots(folder / "job")
    assert roots["kimi_k3.serving"] == {str(folder / "job" / "project" / ".collections")}


def test_status_job_reports_every_service_running_the_plans_argv(jobs):
    proc, _folder = jobs("status")
    assert proc.returncode == 0, proc.stdout[-4000:]
    rows = [line.split() for line in proc.stdout.splitlines() if re.match(r"^\s+k3-sb-\S+\s+\S+\s+k3-", line)]
    services = {(r[0], r[1]) for r in rows}
    assert {("k3-sb-front", "router"), ("k3-sb-prefill", "prefill"), ("k3-sb-decode", "decode")} <= services, rows
    assert all(row[3] == "active/running" and row[6] == "plan" and row[7] == "plan" for row in rows), rows


def test_collect_logs_job_writes_the_bundle_with_the_project_syncs_collections(jobs, deployed, tmp_path):
    proc, folder = jobs("collect_logs", collect_logs_dest=str(tmp_path))
    assert proc.returncode == 0, proc.stdout[-4000:]
    (bundle,) = tmp_path.glob("*.tar.gz")
    with tarfile.open(bundle) as tar:
        names = tar.getnames()
        data = b"".join(tar.extractfile(m).read() for m in tar.getmembers() if m.isfile())
    assert any(name.endswith("plan.json") for name in names)
    assert not any(key.encode() in data for key in deployed["every_key"])
    # community.general.archive ran, and the job's requirements_collections (the project sync's) is
    # the only folder of the project's collections path that holds community.general here.
    actions = set()
    for event in (folder / "job" / "artifacts").rglob("job_events/*.json"):
        data = json.loads(event.read_text())
        if data.get("event") == "runner_on_ok":
            actions.add(data["event_data"].get("resolved_action"))
    assert "community.general.archive" in actions
    project = folder / "job" / "project"
    for candidate in (project / ".collections", project / ".venv", Path("/usr/share/ansible/collections")):
        assert not (candidate / "ansible_collections" / "community" / "general").exists(), candidate
    assert (folder / "job" / "requirements_collections" / "ansible_collections" / "community" / "general").is_dir()
