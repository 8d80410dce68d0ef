"""The artifact as a site installs it: only what a site runs inside, the declared dependencies
enough to resolve every module, filter and role, ansible-lint (production) clean and ansible-test
sanity's exceptions valid there."""

from __future__ import annotations

import subprocess
import tarfile

import pytest
from conftest import ROOT, VENV_BIN
from helpers.collection_artifact import install, only

# What the artifact must never hold: the development, test and CI files.
# ansible-lint on the installed collection runs for a minute or more: make test starts it first.
pytestmark = pytest.mark.slow
NOT_SHIPPED = (".ci/", "Makefile", "tools/", "extensions/", "tests/unit/", "tests/cluster/", "inventories/sandbox/")


def test_the_artifact_holds_what_a_site_runs_and_no_development_file(artifact):
    with tarfile.open(artifact[0]) as tar:
        names = tar.getnames()
    for prefix in NOT_SHIPPED:
        assert not [n for n in names if n.startswith(prefix)], prefix
    for wanted in ("site.yml", "playbooks/site.yml", "roles/engine/README.md", "plugins/filter/host_services.py"):
        assert wanted in names, wanted
    assert "tests/sanity/ignore-2.21.txt" in names


def test_ansible_lint_production_passes_on_the_installed_collection_with_only_its_dependencies(artifact, tmp_path):
    installed = install(artifact, tmp_path)
    env = only(tmp_path)
    # The installed collections are exactly the declared ones (and what they need).
    listed = subprocess.run(
        [VENV_BIN / "ansible-galaxy", "collection", "list", "--format", "yaml"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        cwd=tmp_path,
    ).stdout
    assert "community.docker" in listed and "kimi_k3.serving" in listed and "community.crypto" not in listed, listed
    out = subprocess.run(
        [VENV_BIN / "ansible-lint", "--profile", "production", "--offline", "--nocolor"],
        capture_output=True,
        text=True,
        env=env,
        cwd=installed,
        check=False,
    )
    assert out.returncode == 0, (out.stdout + out.stderr)[-4000:]
    assert "syntax-check" not in out.stdout + out.stderr


def test_sanity_ignore_entries_name_files_of_the_artifact(artifact, tmp_path):
    with tarfile.open(artifact[0]) as tar:
        names = set(tar.getnames())
    for number, line in enumerate((ROOT / "tests" / "sanity" / "ignore-2.21.txt").read_text().splitlines(), 1):
        path = line.split(" ", 1)[0]
        assert path in names, "tests/sanity/ignore-2.21.txt:%d names %s, which the artifact lacks" % (number, path)
