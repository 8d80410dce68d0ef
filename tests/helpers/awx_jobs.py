"""AWX's jobs without an AWX: tools/awx.py lays out a job template's private data folder as AWX
does, and the real ansible-runner runs it (tests/integration/test_awx.py, tests/cluster)."""

from __future__ import annotations

import json
import shutil
import subprocess

import yaml
from conftest import ROOT, VENV_BIN, ansible_env

from helpers.ansible_run import ansible_playbook

BUNDLED = ROOT / ".venv" / "ansible" / "lib" / "python3.12" / "site-packages" / "ansible_collections"


def awx(*args, env=None, check=True):
    return subprocess.run(
        [str(VENV_BIN / "python"), str(ROOT / "tools" / "awx.py"), *map(str, args)],
        capture_output=True,
        text=True,
        check=check,
        cwd=ROOT,
        env=env or ansible_env(),
    )


def project_sync_collections(tmp):
    """The project sync's collections (collections/requirements.yml and their dependencies),
    installed offline into tmp/requirements from tarballs of the pinned `ansible` bundle (Galaxy
    is not reachable here); returns tmp."""
    env = ansible_env()
    requirements = yaml.safe_load((ROOT / "collections" / "requirements.yml").read_text())["collections"]
    tarballs = []
    names = [req["name"] for req in requirements]
    for full in names:  # and their dependencies (community.docker's), as Galaxy would resolve them
        manifest = json.loads((BUNDLED / full.replace(".", "/") / "MANIFEST.json").read_text())
        names += [dep for dep in manifest["collection_info"].get("dependencies") or {} if dep not in names]
        namespace, name = full.split(".")
        source = BUNDLED / namespace / name
        tarball = tmp / ("%s-%s.tar.gz" % (namespace, name))
        subprocess.run([VENV_BIN / "python", ROOT / "tools" / "collection_tarball.py", source, tarball], check=True)
        tarballs.append(tarball)
    subprocess.run(
        # --force: without it ansible-galaxy finds them in the controller's venv and installs nothing.
        [VENV_BIN / "ansible-galaxy", "collection", "install", "--offline", "--force", "-p", tmp / "requirements"]
        + tarballs,
        check=True,
        capture_output=True,
        env=env,
    )
    return tmp


def run_job(operation, pdd, inventory, collections, *options):
    laid = awx("job", operation, pdd, "-i", inventory, *options)
    command = laid.stdout.strip().splitlines()[-1].split()
    # What AWX's project sync leaves in the job's folder.
    shutil.copytree(collections / "requirements", pdd / "requirements_collections", dirs_exist_ok=True)
    return subprocess.run(
        [str(VENV_BIN / command[0]), *command[1:]],
        capture_output=True,
        text=True,
        check=False,
        env=runner_home_env(pdd.parent / "home"),
        timeout=600,
    )


def runner_home_env(home):
    """ansible-runner's environment on an execution node: no config of the checkout, a home of its own,
    and no collection found on Python's path (the controller's venv holds the `ansible` bundle; an
    execution environment has ansible-core alone)."""
    return {
        "PATH": "%s:/usr/bin:/bin" % VENV_BIN,
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "ANSIBLE_COLLECTIONS_SCAN_SYS_PATH": "False",
    }


def checkout_plan(inventory, folder):
    """plan.json as the checkout's own playbooks/plan.yml writes it for ``inventory``."""
    plan = ROOT / "playbooks" / "plan.yml"
    ansible_playbook(plan, "-e", "k3_plan_dir=%s" % folder, inventory=inventory, timeout=None)
    return json.loads((folder / "plan.json").read_text())


def collection_roots(job):
    """Where each collection a job used was loaded from: collection name -> folders (from its
    events' task and role paths)."""
    roots = {}
    for event in (job / "artifacts").rglob("job_events/*.json"):
        data = json.loads(event.read_text()).get("event_data", {})
        for key in ("task_path", "role_path"):
            path = data.get(key) or ""
            if "/ansible_collections/" in path:
                head, tail = path.split("/ansible_collections/", 1)
                roots.setdefault(".".join(tail.split("/")[:2]), set()).add(head)
    return roots
