"""Running Ansible against the sandbox's real test hosts, for the tests that use a deployed sandbox
(``run``: helpers.ansible_run's, which the suites import from here too)."""

from __future__ import annotations

import re
import shlex
import subprocess

import yaml
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
    return on(host, "systemctl " + " ".join(args), check=False)


def _ssh_argv(inventory):
    """ssh's argv to reach the test hosts of ``inventory``'s hosts.yml (tools/sandbox.sh's: its key,
    its known_hosts) and {host: address}."""
    written = yaml.safe_load((inventory / "hosts.yml").read_text())["all"]
    common = written["vars"]
    argv = ["ssh", "-i", common["ansible_ssh_private_key_file"], "-o", "BatchMode=yes"]
    argv += ["-o", "StrictHostKeyChecking=yes", "-o", "LogLevel=ERROR"]
    # One connection per host kept for a minute, as Ansible keeps its own: the next probe reuses it.
    argv += ["-o", "ControlMaster=auto", "-o", "ControlPersist=60s", "-o", "ControlPath=/tmp/k3-test-ssh-%C"]
    argv += shlex.split(common.get("ansible_ssh_common_args", ""))
    hosts = {
        name: "%s@%s" % (common["ansible_user"], vars_["ansible_host"]) for name, vars_ in written["hosts"].items()
    }
    return argv, hosts


def ssh_each(inventory, commands, check=True, timeout=120):
    """{host: CompletedProcess} of one shell command per host (``commands``: {host: command}), over
    plain ssh to the test hosts of ``inventory``, all at once: a probe of a few hosts in a fraction of
    a second (measured under load: 1.7 s for four hosts with new connections, 0.2 s with them kept,
    against 6.7 s for an ad-hoc Ansible run on one). ``check``: a command that fails fails with its
    host and output. Test probes and faults only: what the collection does goes through Ansible."""
    argv, address = _ssh_argv(inventory)
    procs = {
        host: subprocess.Popen(
            argv + [address[host], command], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for host, command in commands.items()
    }
    out = {}
    for host, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=timeout)
        done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
        if check:
            assert done.returncode == 0, "%s: %s exited %d:\n%s%s" % (
                host,
                commands[host],
                done.returncode,
                stdout,
                stderr,
            )
        out[host] = done
    return out


def on(host, command, check=True, inventory=INVENTORY):
    """One shell command on one test host over ssh (ssh_each): its CompletedProcess."""
    return ssh_each(inventory, {host: command}, check=check)[host]


def main_pids(units, inventory=INVENTORY):
    """{host: MainPID (0: not running)} of each host's unit in ``units`` ({host: unit}), over ssh."""
    out = ssh_each(inventory, {host: "systemctl show -p MainPID --value %s" % unit for host, unit in units.items()})
    return {host: int(done.stdout.strip()) for host, done in out.items()}
