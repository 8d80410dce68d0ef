"""Running Ansible against the sandbox's real test hosts, for the tests that use a deployed sandbox
(``run``: helpers.ansible_run's, which the suites import from here too)."""

from __future__ import annotations

import re

from conftest import ROOT, VENV_BIN

from helpers.ansible_run import ansible_playbook, run

INVENTORY = ROOT / "inventories" / "sandbox"
HOST_VARS = INVENTORY / "host_vars"


# One host set at a time on the sandbox's bridge: the fixture that holds it, and how it goes down.
_HOLDER = {}


def claim_hosts(name, down):
    """Before a fixture brings up host set ``name``: the set another fixture holds goes down first."""
    held = _HOLDER.get("current")
    if held and held[0] != name:
        held[1]()
    _HOLDER["current"] = (name, down)


def release_hosts(name):
    """At a fixture's end: its host set goes down, unless another fixture has claimed the machine since."""
    held = _HOLDER.get("current")
    if held and held[0] == name:
        del _HOLDER["current"]
        held[1]()


# The arguments every playbook of the session gets (the deployment's vault and plan folder), set by
# the session's fixture (tests/helpers/cluster_sandbox.py); a call that passes a vault itself gets none.
SESSION_ARGS = []


def session_args(args):
    return [] if "--vault-password-file" in args else list(SESSION_ARGS)


def playbook(name, *args, check=True, env=None):
    """A playbook on the sandbox's hosts, with the session's arguments (unless ``args`` has a vault)."""
    return ansible_playbook(name, *session_args(args), *args, inventory=INVENTORY, check=check, env=env)


def recap(output):
    """PLAY RECAP counts by host."""
    return {
        m.group(1): {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
        for m in re.finditer(r"^(\S+)\s+:\s+(ok=.*)$", output, re.M)
    }


def adhoc(host, module, args, check=True):
    return run(VENV_BIN / "ansible", host, "-i", INVENTORY, "-m", module, "-a", args, check=check)


def systemctl(host, *args):
    return adhoc(host, "ansible.builtin.command", "systemctl " + " ".join(args), check=False)
