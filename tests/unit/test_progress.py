"""tests/helpers/progress.py: which control group's counter a test's suite CPU line reads."""

from __future__ import annotations

from helpers.progress import suite_counter


def test_the_counter_is_that_of_a_suite_group_only(tmp_path):
    cgroup = tmp_path / "cgroup"
    cgroup.write_text("4:memory:/x\n2:cpu,cpuacct:/k3-suites/cluster+security\n0::/\n")
    assert suite_counter(cgroup, tmp_path) == tmp_path / "k3-suites" / "cluster+security" / "cpuacct.usage"
    # Outside tools/suite_cpu.py's groups (make test-fast, a test run by hand): no line.
    cgroup.write_text("2:cpuacct:/\n1:cpu:/\n")
    assert suite_counter(cgroup, tmp_path) is None
    assert suite_counter(tmp_path / "missing", tmp_path) is None
