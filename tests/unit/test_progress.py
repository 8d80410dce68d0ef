"""tests/helpers/progress.py: which control group's counter a test's suite CPU line reads; how a
command's ``run`` line names it and what it gives."""

from __future__ import annotations

import subprocess
import sys

from conftest import ROOT
from helpers import progress
from helpers.progress import command_label, suite_counter

sys.path.insert(0, str(ROOT / "tools"))
import ci_watch  # noqa: E402


def test_the_counter_is_that_of_a_suite_group_only(tmp_path):
    cgroup = tmp_path / "cgroup"
    cgroup.write_text("4:memory:/x\n2:cpu,cpuacct:/k3-suites/cluster+security\n0::/\n")
    assert suite_counter(cgroup, tmp_path) == tmp_path / "k3-suites" / "cluster+security" / "cpuacct.usage"
    # Outside tools/suite_cpu.py's groups (make test-fast, a test run by hand): no line.
    cgroup.write_text("2:cpuacct:/\n1:cpu:/\n")
    assert suite_counter(cgroup, tmp_path) is None
    assert suite_counter(tmp_path / "missing", tmp_path) is None


def test_a_command_is_named_by_its_program_playbook_and_flags_never_its_values():
    argv = ["/x/.venv/ansible/bin/ansible-playbook", "site.yml", "-i", "/t/hosts.yml", "--diff", "--tags", "plan"]
    argv += ["-e", '{"k3_api_key": "sk-secret"}', "-e", "@/t/secrets.yml", "-e", "pause_after=1", "--limit=k3-x"]
    argv += ["-e", "/t/extra.yml"]
    label = command_label(argv)
    assert label == "ansible-playbook site.yml --diff --tags"
    assert "secret" not in label and "pause_after" not in label and "k3-x" not in label
    assert command_label(["tools/sandbox.sh", "up"]) == "sandbox.sh up"
    assert command_label(["ansible-playbook", "-e", "@/t/secrets.yml"]) == "ansible-playbook"


def test_a_run_line_gives_the_processor_time_wall_time_and_test(tmp_path, monkeypatch):
    out = tmp_path / "progress.log"
    monkeypatch.setattr(progress, "PROGRESS", str(out))
    monkeypatch.setitem(progress._state, "write", True)
    monkeypatch.setitem(progress._state, "counter", None)  # no suite group: own and children's time
    monkeypatch.setitem(progress._current, "nodeid", "tests/x.py::test_y")
    with progress.timed(["/usr/bin/python3", "-c", "sum(range(3_000_000))"]):
        subprocess.run([sys.executable, "-c", "sum(range(3_000_000))"], check=True)
    (line,) = out.read_text().splitlines()
    stamp, kind, seconds, rest = line.split(" ", 3)
    assert kind == "run" and float(seconds) > 0.01, line
    assert rest.startswith("python3 (") and rest.endswith(" s) in tests/x.py::test_y"), line
    assert ci_watch.heaviest([line], 1, "run") == [(float(seconds), rest)]
