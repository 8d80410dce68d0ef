"""tools/suite_cpu.py: a suite's processor time from its control group, its exit status kept."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import suite_cpu  # noqa: E402

TOOL = [sys.executable, str(ROOT / "tools" / "suite_cpu.py")]
# Two processes that burn about a second each, one of them ended before the command ends: the
# group's counter keeps the time of processes that are gone.
BURN = "python3 -c 'sum(range(2 * 10**7))' & python3 -c 'sum(range(2 * 10**7))'; wait; exit 3"


@pytest.mark.skipif(not os.access(suite_cpu.ROOT, os.W_OK), reason="no writable cpuacct hierarchy (root on cgroup v1)")
def test_the_processor_time_of_every_process_of_the_suite_is_counted(tmp_path):
    log = tmp_path / "suite-cpu.log"
    alone = subprocess.run(
        ["bash", "-c", "time -p (%s)" % BURN], capture_output=True, text=True, check=False
    ).stderr.split()
    spent = float(alone[alone.index("user") + 1]) + float(alone[alone.index("sys") + 1])
    name = "unit-%d" % os.getpid()
    out = subprocess.run(
        [*TOOL, name, "bash", "-c", BURN],
        capture_output=True,
        text=True,
        env=dict(os.environ, K3_SUITE_CPU=str(log)),
        check=False,
    )
    assert out.returncode == 3
    (line,) = log.read_text().splitlines()
    assert line == out.stdout.strip()
    cpu = float(line.split(" wall, ")[1].split(" CPU-s")[0])
    # The figure is rounded to a second: within a second of the same work timed by the shell.
    assert abs(cpu - spent) <= 1.0 and spent > 0.5, (line, spent)
    assert line.startswith("suite %s: " % name) and line.endswith(", exit 3")
    assert not (suite_cpu.ROOT / "k3-suites" / name).exists()


def test_without_a_control_group_the_command_runs_and_the_line_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(suite_cpu, "ROOT", tmp_path / "file")
    (tmp_path / "file").write_text("")  # not a folder: no group can be made under it
    monkeypatch.setenv("K3_SUITE_CPU", str(tmp_path / "log"))
    assert suite_cpu.main(["suite_cpu.py", "plain", "sh", "-c", "exit 5"]) == 5
    (line,) = (tmp_path / "log").read_text().splitlines()
    assert line.startswith("suite plain: ") and line.endswith("CPU not measured, exit 5")


@pytest.mark.skipif(
    not (os.access(suite_cpu.ROOT, os.W_OK) and os.access(suite_cpu.CPU_ROOT, os.W_OK)),
    reason="no writable cpuacct and cpu hierarchies (root on cgroup v1)",
)
def test_a_suite_with_a_low_weight_takes_what_the_others_leave(tmp_path):
    """A suite without a weight (its processes in the root group, as make test's sandbox suites) and
    one weighted 64 spin on the same core for three seconds: the first gets nearly all of it (at
    equal weights each would get half)."""
    log = tmp_path / "suite-cpu.log"
    go = tmp_path / "go"
    # Each spins from the same moment: a program that starts late (a loaded machine) would have the
    # core to itself for a while and blur the share.
    wait = 'touch "$0.ready"; while [ ! -e %s ]; do sleep 0.02; done; exec "$@"' % go
    spin = ["sh", "-c", wait, None, "taskset", "-c", "0", "timeout", "3", "sh", "-c", "while :; do :; done"]
    env = dict(os.environ, K3_SUITE_CPU=str(log))
    heavy_name, light_name = "unit-heavy-%d" % os.getpid(), "unit-light-%d" % os.getpid()
    # The first from the root cpu group, as make test runs its sandbox suites: under make test this test
    # runs in the table-driven suites' own weighted group, which a process would otherwise inherit.
    in_root = ["sh", "-c", 'echo $$ > %s && exec "$@"' % (suite_cpu.CPU_ROOT / "tasks"), "sh"]
    spins = {name: [*spin[:3], str(tmp_path / name), *spin[4:]] for name in (heavy_name, light_name)}
    procs = [
        subprocess.Popen([*in_root, *TOOL, heavy_name, *spins[heavy_name]], env=env, stdout=subprocess.DEVNULL),
        subprocess.Popen(
            [*TOOL, "--cpu-shares", "64", light_name, *spins[light_name]], env=env, stdout=subprocess.DEVNULL
        ),
    ]
    deadline = time.monotonic() + 60
    while not all((tmp_path / (name + ".ready")).exists() for name in spins) and time.monotonic() < deadline:
        time.sleep(0.02)
    go.touch()
    assert [p.wait(timeout=60) for p in procs] == [124, 124]  # timeout's status: both spun until stopped
    # The share of a core each had, to a hundredth (the seconds are rounded to whole ones): under load
    # from other programs on core 0 both get less, in the same proportion.
    cores = {
        line.split(":")[0].split()[1]: float(line.split(" CPU-s (")[1].split(" cores)")[0])
        for line in log.read_text().splitlines()
    }
    assert cores[heavy_name] >= 0.1 and cores[light_name] <= cores[heavy_name] / 4, cores
    groups = [suite_cpu.ROOT / "k3-suites" / n for n in (heavy_name, light_name)]
    groups.append(suite_cpu.CPU_ROOT / ("k3-suite-" + light_name))
    assert not any(group.exists() for group in groups), groups
