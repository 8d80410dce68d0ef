"""The readable launch scripts beside plan.json run exactly the planned argv with the planned environment."""

from __future__ import annotations

import pytest
from conftest import example_names, example_plan
from spec_runner import expected_env_from_plan, run_script

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._planner import launch_script


@pytest.mark.parametrize("name", example_names())
def test_launch_scripts_reproduce_the_plan(name):
    plan = example_plan(name)
    checked = 0
    for host, data in plan["hosts"].items():
        for svc in data["services"]:
            got = run_script(launch_script(plan, host, svc), programs=(svc["argv"][0],))
            assert got["argv"] == svc["argv"], (host, svc["name"])
            assert got["env"] == expected_env_from_plan(svc), (host, svc["name"])
            assert got["sourced"] == (svc.get("shell") or {}).get("source", [])
            assert set(got["unset"]) <= set((svc.get("shell") or {}).get("unset", []))
            checked += 1
    assert checked == sum(len(d["services"]) for d in plan["hosts"].values())


def test_a_program_named_by_its_absolute_path_is_stood_in_for_inside_the_temporary_folder(tmp_path):
    """The stand-ins never replace a real program: the tests run as root, and a stand-in written at an
    absolute path once replaced the controller's /usr/bin/python3.11."""
    target = tmp_path / "usr" / "bin" / "python3"
    target.parent.mkdir(parents=True)
    target.write_text("the real one\n")
    got = run_script("exec %s /opt/guard.py --grace 5\n" % target, programs=(str(target),))
    assert got["argv"] == [str(target), "/opt/guard.py", "--grace", "5"]
    assert target.read_text() == "the real one\n"
