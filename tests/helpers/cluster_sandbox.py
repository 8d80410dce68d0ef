"""The locked-down sandbox shared by tests/cluster and tests/security (a plugin of tests/conftest.py).

One host set and one deployment for both suites (run them in one pytest session, as make test
does): the sandbox's hosts (tools/sandbox.sh with tests/cluster/hosts.txt: the default sandbox,
its monitoring host k3-sb-mon, and k3-sb-outside, a machine on the same network that is in no
group of the deployment, for the firewall tests). The hosts are built once and removed at the
session's end, or as soon as a fixture of another host set on the same addresses claims the
machine (sandbox_run.claim_hosts). Before anything runs, each deployment host's changes to its
base image (the overlay's upper folder) are recorded, for the teardown test to compare.

The deployment has two random client keys and an admin key from an Ansible Vault file made the way
tools/sandbox_secrets.sh does it (a pipe into ansible-vault): no key is ever in an argument list,
this test's included; every playbook of the session gets the vault (sandbox_run.SESSION_ARGS).
``deployed`` deploys from hosts with nothing of the collection on them (site.yml --diff, then the
re-run), sampling every process's argv on the machine (the test hosts' too) for the keys. The
preflight module (tests/cluster/test_preflight_stage.py, first by name) runs on those clean hosts
and asks for ``deployed`` last; the other modules ask for ``cluster``, which converges the
deployment with site.yml when a module before may have left it changed. Run in another order, the
preflight module removes a deployment first (playbooks/teardown.yml).
"""

from __future__ import annotations

import secrets
import subprocess

import pytest
from conftest import ROOT, VENV_BIN, ansible_env

from helpers import sandbox_run
from helpers.sandbox_run import HOST_VARS, claim_hosts, playbook, release_hosts, run
from helpers.secured_sandbox import DEPLOYMENT, MONITORING, ArgvWatch, host_changes

HOSTS = {"K3SB_HOSTS_FILE": str(ROOT / "tests" / "cluster" / "hosts.txt")}


def clear_host_vars():
    for f in HOST_VARS.glob("*.yml"):
        f.unlink()


def down():
    clear_host_vars()
    run("tools/sandbox.sh", "down", check=False, env=HOSTS)


def vault_args(folder):
    """Two random client keys, an admin key and a monitoring password in a vault file under
    ``folder``; the four (in that order) and the playbook arguments that read the file."""
    keys = ["sk-k3-test-" + secrets.token_urlsafe(24), "sk-k3-test-" + secrets.token_urlsafe(24)]
    admin = "sk-k3-test-admin-" + secrets.token_urlsafe(24)
    monitoring = secrets.token_urlsafe(24)
    password = folder / "vault-password"
    password.write_text(secrets.token_urlsafe(32) + "\n")
    password.chmod(0o600)
    secrets_file = folder / "secrets.yml"
    subprocess.run(
        [VENV_BIN / "ansible-vault", "encrypt", "--vault-password-file", password, "--output", secrets_file, "-"],
        input="---\nk3_api_key:\n  - %s\n  - %s\nk3_admin_api_key: %s\nk3_monitoring_password: %s\n"
        % (keys[0], keys[1], admin, monitoring),
        text=True,
        check=True,
        capture_output=True,
        env=ansible_env(),
    )
    return keys + [admin, monitoring], ["-e", "@%s" % secrets_file, "--vault-password-file", str(password)]


@pytest.fixture(scope="session")
def sandbox_hosts(tmp_path_factory):
    every, args = vault_args(tmp_path_factory.mktemp("vault"))
    plan_dir = tmp_path_factory.mktemp("plan")
    args += ["-e", "k3_plan_dir=%s" % plan_dir]
    run(ROOT / ".venv" / "vllm" / "bin" / "python", "tools/tiny_model.py", ".cache/sandbox/models/tiny-llama")
    # The stand-in checkpoint as the sandbox's hub serves it (site.yml fetches it from there).
    run(
        ROOT / ".venv" / "vllm" / "bin" / "python",
        "tools/sandbox_hub.py",
        ".cache/sandbox/models/tiny-llama",
        ".cache/sandbox/hub/mirrors",
        "k3-sandbox/tiny-llama",
    )
    claim_hosts("sandbox", down)
    run("tools/sandbox.sh", "up", env=HOSTS)
    state = {
        "deployed": False,
        "converged": False,
        # keys: the clients' (k3_api_key); admin: k3_admin_api_key; every_key: those and the
        # monitoring's password (k3_monitoring_password).
        "keys": every[:2],
        "admin": every[2],
        "every_key": every,
        "args": tuple(args),
        "plan_dir": plan_dir,
        "before": {name: host_changes(name) for name in DEPLOYMENT},
    }
    sandbox_run.SESSION_ARGS[:] = args
    MONITORING["password"] = every[3]
    try:
        yield state
    finally:
        sandbox_run.SESSION_ARGS.clear()
        release_hosts("sandbox")


@pytest.fixture(scope="session")
def deployed(sandbox_hosts):
    """The sandbox deployed from nothing with the keys, their argv watched; the re-run's output too."""
    state = sandbox_hosts
    watch = ArgvWatch(state["every_key"])
    watch.start()
    try:
        first = playbook("site.yml", "--diff")
        second = playbook("site.yml")
    finally:
        watch.stop.set()
        watch.join()
    state.update(deployed=True, converged=True, runs=[first, second], watch=watch)
    return state


@pytest.fixture(scope="module")
def cluster(deployed, request):
    """The deployed sandbox, converged with site.yml unless the deployment has just been made or
    the module before left it converged."""
    if not deployed["converged"] or not deployed["deployed"]:
        playbook("site.yml")
        deployed["deployed"] = True
    deployed["converged"] = True
    failed_before = request.session.testsfailed
    try:
        yield deployed
    finally:
        clear_host_vars()
        # A module may leave a service stopped or a file changed: the next one converges first.
        # A module that declares LEAVES_CONVERGED (it changes nothing, or ends with the converging
        # run it checks) spares the next one that run, unless one of its tests failed.
        kept = getattr(request.module, "LEAVES_CONVERGED", False) and request.session.testsfailed == failed_before
        deployed["converged"] = bool(kept)
