"""The operations' own variables (playbooks/vars/operations.yml) are checked before anything runs.

Each playbook's first play checks restart_serial, confirm, node ... against their declarations:
a value outside its choices or range, a wrong type or a missing required variable is refused,
naming the variable, before the plan and before any host is contacted (the example inventories'
hosts do not exist: a run that got further would fail to connect instead).
"""

from __future__ import annotations

import pytest
from conftest import EXAMPLES
from helpers.ansible_run import ansible_playbook

INVENTORY = EXAMPLES / "nvidia-pd-nixl" / "hosts.yml"


def run(playbook, *extra):
    proc = ansible_playbook("playbooks/%s.yml" % playbook, *extra, inventory=INVENTORY, check=False, timeout=300)
    return proc.returncode, " ".join((proc.stdout + proc.stderr).split())


@pytest.mark.parametrize(
    "playbook,extra,said",
    [
        ("teardown", ["-e", "confirm=maybe"], "value of confirm must be one of: no, yes, got: maybe"),
        ("restart", ["-e", "restart_serial=0"], "restart_serial is 0: give a whole number from 1 to 64"),
        ("upgrade", ["-e", "restart_serial=two"], "argument 'restart_serial' is of type str"),
        ("remove_node", [], "missing required arguments: node"),
        ("scale", ["-e", "confirm=YES", "-e", "node=h1"], "value of confirm must be one of: no, yes, got: YES"),
    ],
)
def test_a_bad_operation_variable_is_refused_before_the_plan(playbook, extra, said):
    code, out = run(playbook, *extra)
    assert code != 0 and said in out, out[-3000:]
    assert "Plan the Kimi-K3 deployment" not in out and "UNREACHABLE" not in out


def test_a_good_value_passes_the_check():
    # teardown --check on hosts that do not exist: the check passes, then the plan runs.
    code, out = run("teardown", "-e", "confirm=no", "-e", "teardown_purge=false", "--check")
    assert "Check the variables of the operation: teardown" in out and "Plan the Kimi-K3 deployment" in out, out[-3000:]


def test_a_given_no_is_refused_without_a_prompt_even_on_a_terminal(tmp_path):
    """AWX runs jobs on a pseudo-terminal and its survey always sends confirm: a prompt would wait
    forever. teardown with confirm=no, on a terminal (util-linux `script`), is refused at once."""
    args = ["-e", "confirm=no", "-e", "k3_plan_dir=%s" % (tmp_path / "plan")]
    proc = ansible_playbook(
        "playbooks/teardown.yml", *args, inventory=INVENTORY, check=False, timeout=300, terminal=True
    )
    out = " ".join(proc.stdout.split())
    assert proc.returncode != 0 and "teardown not confirmed, nothing was changed" in out, out[-3000:]
    assert "Type 'yes' to go on" not in out
