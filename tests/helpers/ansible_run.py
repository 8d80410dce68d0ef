"""Ansible's commands as the tests run them: from the checkout, with Ansible's environment
(tests/conftest.py's ``ansible_env``), output captured, and on a failure the command and the end of
its output in the test's report. ``ansible_playbook`` is how a test runs a playbook."""

from __future__ import annotations

import shlex
import subprocess

from conftest import ROOT, VENV_BIN, ansible_env

from helpers.progress import timed


def run(*cmd, check=True, env=None, timeout=1800, cwd=ROOT, inherit_env=True, terminal=False):
    """Run ``cmd`` in ``cwd`` with Ansible's environment plus ``env`` (``inherit_env=False``: with
    ``env`` alone); ``terminal``: on a pseudo-terminal (util-linux ``script``), stdin /dev/null.
    ``check``: a non-zero exit fails with the command and the end of its stdout and stderr."""
    argv = [str(c) for c in cmd]
    if terminal:
        argv = ["script", "-qec", shlex.join(argv), "/dev/null"]
    with timed(cmd):
        proc = subprocess.run(
            argv,
            cwd=cwd,
            env={**ansible_env(), **(env or {})} if inherit_env else dict(env or {}),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            stdin=subprocess.DEVNULL if terminal else None,
        )
    if check and proc.returncode:
        raise AssertionError(
            "%s failed (%d):\n%s\n%s" % (shlex.join(argv), proc.returncode, proc.stdout[-6000:], proc.stderr[-3000:])
        )
    return proc


def ansible_playbook(
    playbook, *args, inventory, check=True, env=None, timeout=1800, cwd=ROOT, inherit_env=True, terminal=False
):
    """``ansible-playbook <playbook> -i <inventory> <args>`` (the controller's venv's), run as ``run``
    runs a command; returns the CompletedProcess (``.args``: the argv it ran)."""
    return run(
        VENV_BIN / "ansible-playbook",
        playbook,
        "-i",
        inventory,
        *args,
        check=check,
        env=env,
        timeout=timeout,
        cwd=cwd,
        inherit_env=inherit_env,
        terminal=terminal,
    )
