"""The collection as a user installs it: built with ``ansible-galaxy collection build``, installed
from the tarball with ``ansible-galaxy collection install`` into an empty collections path, then
used from a folder that is not the checkout (no ansible.cfg of ours, no roles path, no link back to
the checkout): its playbooks run by their fully qualified names, its plugins resolve and
``ansible-doc`` documents every module and filter.
"""

from __future__ import annotations

import json
import subprocess
import tarfile

import pytest
import yaml
from conftest import EXAMPLES, ROOT, VENV_BIN
from helpers.ansible_run import ansible_playbook

BUNDLED = ROOT / ".venv" / "ansible" / "lib" / "python3.12" / "site-packages"
# Folders no artifact carries: at the top (the controller's outputs) or anywhere (caches).
TOP_LEFT_OUT = {".venv", ".cache", ".collections", ".hypothesis", "plan", "benchmarks", "evaluations"}
ANY_LEFT_OUT = {"__pycache__", ".pytest_cache", ".ruff_cache"}


def bare_env(tmp, collections):
    """An environment with nothing of the checkout: a config that names only the installed collection."""
    cfg = tmp / "ansible.cfg"
    cfg.write_text(
        "[defaults]\ncollections_path = %s:%s\ngathering = explicit\ninterpreter_python = auto_silent\n"
        "[inventory]\nhost_pattern_mismatch = ignore\n" % (collections, BUNDLED)
    )
    return {
        "PATH": "%s:/usr/bin:/bin" % VENV_BIN,
        "HOME": str(tmp),
        "ANSIBLE_CONFIG": str(cfg),
        "ANSIBLE_LOCAL_TEMP": str(tmp / "ansible-tmp"),
    }


def run(argv, cwd, env):
    proc = subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, "%s failed:\n%s\n%s" % (argv[:3], proc.stdout[-4000:], proc.stderr[-4000:])
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory, artifact):
    tmp = tmp_path_factory.mktemp("installed")
    env = bare_env(tmp, tmp / "collections")
    tarball = artifact[0]
    run(
        [VENV_BIN / "ansible-galaxy", "collection", "install", "--offline", tarball, "-p", tmp / "collections"],
        tmp,
        env,
    )
    work = tmp / "work"
    work.mkdir()
    return {"tmp": tmp, "tarball": tarball, "env": env, "work": work}


def test_the_tarball_leaves_out_venvs_caches_outputs_and_generated_inventories(installed):
    with tarfile.open(installed["tarball"]) as tar:
        names = tar.getnames()
    assert "MANIFEST.json" in names and "meta/runtime.yml" in names
    assert "collections/requirements.yml" in names and "meta/execution-environment.yml" in names
    for name in names:
        parts = name.split("/")
        assert parts[0] not in TOP_LEFT_OUT and not ANY_LEFT_OUT & set(parts), name
        assert not name.endswith((".pyc", ".tar.gz")), name
    generated = {"inventories/sandbox/hosts.yml", "inventories/sandbox-ha/hosts.yml"}
    assert not generated & set(names)
    manifest = json.loads(tar_member(installed["tarball"], "MANIFEST.json"))
    assert manifest["collection_info"]["namespace"] == "kimi_k3" and manifest["collection_info"]["name"] == "serving"
    runtime = yaml.safe_load(tar_member(installed["tarball"], "meta/runtime.yml"))
    assert runtime["requires_ansible"].startswith(">=")


def tar_member(tarball, name):
    with tarfile.open(tarball) as tar:
        return tar.extractfile(name).read().decode()


def test_the_installed_plan_playbook_runs_by_its_name_and_plans_what_the_checkout_plans(installed, tmp_path):
    inventory = EXAMPLES / "nvidia-pd-nixl" / "hosts.yml"
    ansible_playbook(
        "kimi_k3.serving.plan",
        "-e",
        "k3_plan_dir=%s" % (tmp_path / "a"),
        inventory=inventory,
        timeout=None,
        cwd=installed["work"],
        env=installed["env"],
        inherit_env=False,
    )
    ansible_playbook(
        ROOT / "playbooks" / "plan.yml", "-e", "k3_plan_dir=%s" % (tmp_path / "b"), inventory=inventory, timeout=None
    )
    installed_plan = json.loads((tmp_path / "a" / "plan.json").read_text())
    checkout_plan = json.loads((tmp_path / "b" / "plan.json").read_text())
    assert installed_plan["hosts"] and installed_plan == checkout_plan
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == sorted(p.name for p in (tmp_path / "b").iterdir())


def test_site_by_its_name_resolves_every_role_and_plugin(installed):
    """site.yml by its name (--list-tasks): every play parses, every role and plugin resolves."""
    proc = ansible_playbook(
        "kimi_k3.serving.site",
        "--list-tasks",
        inventory=EXAMPLES / "nvidia-tp8",
        check=False,
        timeout=None,
        cwd=installed["work"],
        env=installed["env"],
        inherit_env=False,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    for role in ("k3_plan", "preflight", "engine", "router", "verify", "monitoring"):
        assert "%s : " % role in proc.stdout, role


def plugin_names(kind):
    folder = ROOT / "plugins" / kind
    return sorted(p.stem for p in folder.glob("*.py") if not p.name.startswith("_"))


@pytest.mark.parametrize("kind,ansible_kind", [("modules", "module"), ("filter", "filter")])
def test_ansible_doc_documents_every_module_and_filter_of_the_installed_collection(installed, kind, ansible_kind):
    names = plugin_names(kind)
    assert names
    listed = run(
        [VENV_BIN / "ansible-doc", "-t", ansible_kind, "-l", "kimi_k3.serving", "--json"],
        installed["work"],
        installed["env"],
    )
    assert sorted(k.split(".")[-1] for k in json.loads(listed.stdout)) == names
    docs = run(
        [VENV_BIN / "ansible-doc", "-t", ansible_kind, "--json"] + ["kimi_k3.serving.%s" % n for n in names],
        installed["work"],
        installed["env"],
    )
    found = json.loads(docs.stdout)
    for name in names:
        doc = found["kimi_k3.serving.%s" % name]["doc"]
        assert doc["short_description"] and doc["description"], name
