"""The changelog as a release makes it: antsibull-changelog lints the fragments and, in a copy of
the collection's files, turns them into the next release's section of CHANGELOG.rst."""

from __future__ import annotations

import shutil
import subprocess

import yaml
from conftest import ROOT, VENV_BIN, ansible_env

TOOL = VENV_BIN / "antsibull-changelog"


def test_the_fragments_are_valid():
    proc = subprocess.run([str(TOOL), "lint"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and not proc.stdout.strip(), proc.stdout + proc.stderr


def test_a_release_turns_every_fragment_into_the_changelog(tmp_path):
    copy = tmp_path / "serving"
    for name in ("galaxy.yml", "changelogs", "plugins", "meta"):
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            copy.mkdir(exist_ok=True)
            shutil.copy(source, copy / name)
    fragments = sorted((copy / "changelogs" / "fragments").glob("*.yml"))
    assert fragments
    entries = []
    for fragment in fragments:
        for items in yaml.safe_load(fragment.read_text()).values():
            entries += items if isinstance(items, list) else [items]
    proc = subprocess.run(
        [str(TOOL), "release", "--version", "9.9.9", "--date", "2026-12-02"],
        cwd=copy,
        # The release asks ansible-doc (in the venv) which plugins are new.
        env=ansible_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    changes = yaml.safe_load((copy / "changelogs" / "changelog.yaml").read_text())
    assert "9.9.9" in changes["releases"]
    text = " ".join((copy / "CHANGELOG.rst").read_text().split())
    assert "v9.9.9" in text
    for entry in entries:
        assert " ".join(entry.split())[:60] in text, entry
    # keep_fragments is false: a release consumes its fragments.
    assert not list((copy / "changelogs" / "fragments").glob("*.yml"))
