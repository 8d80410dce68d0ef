"""The default sandbox's test hosts, shared by the modules of tests/cluster (a plugin of tests/conftest.py).

The hosts are built once (tools/sandbox.sh up) and removed at the session's end, or as soon as a
fixture of another host set on the same addresses claims the machine (sandbox_run.claim_hosts). The
preflight module (test_preflight_stage.py, first by name) needs hosts with nothing of the
collection on them and deploys at its end; the other modules ask for ``cluster``, which converges
the deployment with site.yml (a re-run when it is already there). Run in another order, the
preflight module removes a deployment first (playbooks/teardown.yml).
"""

from __future__ import annotations

import pytest
from conftest import ROOT
from sandbox_run import HOST_VARS, claim_hosts, playbook, release_hosts, run


def clear_host_vars():
    for f in HOST_VARS.glob("*.yml"):
        f.unlink()


def down():
    clear_host_vars()
    run("tools/sandbox.sh", "down", check=False)


@pytest.fixture(scope="session")
def sandbox_hosts():
    run(ROOT / ".venv" / "vllm" / "bin" / "python", "tools/tiny_model.py", ".cache/sandbox/models/tiny-llama")
    claim_hosts("sandbox", down)
    run("tools/sandbox.sh", "up")
    state = {"deployed": False}
    try:
        yield state
    finally:
        release_hosts("sandbox")


@pytest.fixture(scope="module")
def cluster(sandbox_hosts):
    """A deployed sandbox (site.yml; quick when a module before deployed it)."""
    playbook("site.yml")
    sandbox_hosts["deployed"] = True
    try:
        yield sandbox_hosts
    finally:
        clear_host_vars()
