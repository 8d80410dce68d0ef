"""The collection's artifact, built from the checkout as a release is, and the collections it
declares as dependencies, tarred from the ones the pinned `ansible` package bundles."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml
from conftest import ROOT, VENV_BIN, ansible_env

BUNDLED = next((ROOT / ".venv" / "ansible" / "lib").glob("python3*/site-packages")) / "ansible_collections"


def galaxy_dependencies():
    """{collection: version range} of galaxy.yml, with what those need in turn (their MANIFEST.json)."""
    import json

    wanted = dict(yaml.safe_load((ROOT / "galaxy.yml").read_text())["dependencies"])
    queue = list(wanted)
    while queue:
        ns, name = queue.pop().split(".")
        manifest = json.loads((BUNDLED / ns / name / "MANIFEST.json").read_text())
        for dep, spec in (manifest["collection_info"].get("dependencies") or {}).items():
            if dep not in wanted:
                wanted[dep] = spec
                queue.append(dep)
    return wanted


@pytest.fixture(scope="session")
def artifact(tmp_path_factory):
    """(the collection's tarball, [tarballs of its dependencies])."""
    out = tmp_path_factory.mktemp("artifact")
    subprocess.run(
        [VENV_BIN / "ansible-galaxy", "collection", "build", "--output-path", out, ROOT],
        check=True,
        capture_output=True,
        env=ansible_env(),
    )
    tarball = next(out.glob("kimi_k3-serving-*.tar.gz"))
    deps = []
    for collection in galaxy_dependencies():
        ns, name = collection.split(".")
        dep = out / ("%s-%s.tar.gz" % (ns, name))
        subprocess.run(
            [sys.executable, ROOT / "tools" / "collection_tarball.py", BUNDLED / ns / name, dep],
            check=True,
            capture_output=True,
        )
        deps.append(dep)
    return tarball, deps


def install(artifact, folder):
    """``ansible-galaxy collection install`` of the artifact with its dependencies' tarballs and
    nothing else, offline: the resolver checks galaxy.yml's ranges against their versions."""
    tarball, deps = artifact
    out = subprocess.run(
        [VENV_BIN / "ansible-galaxy", "collection", "install", "--offline", "-p", folder, tarball, *deps],
        capture_output=True,
        text=True,
        env=only(folder),
        check=False,
    )
    assert out.returncode == 0 and "was installed successfully" in out.stdout, out.stdout + out.stderr
    return folder / "ansible_collections" / "kimi_k3" / "serving"


def only(folder):
    """The environment of a controller that has the installed collections and no others."""
    env = ansible_env()
    env.update(ANSIBLE_COLLECTIONS_PATH=str(folder), ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="False")
    env.pop("ANSIBLE_CONFIG")
    return env
