#!/usr/bin/env python3
"""Run one suite of make test and say how much processor time it took, its test hosts included.

    tools/suite_cpu.py [--cpu-shares N] NAME COMMAND [ARG...]

The command runs in a cpuacct control group of its own (cgroup v1, /sys/fs/cgroup/cpuacct/k3-suites/
NAME), which every process it starts inherits: its forks, its ssh, and the test hosts that
tools/sandbox.sh starts for it (systemd-nspawn and everything inside). The group's counter keeps
the time of processes that have ended, so the figure is the suite's whole processor time, which
sampling processes cannot give (most of a suite's processes live a fraction of a second). At the
end it prints one line, and appends it to $K3_SUITE_CPU (default .cache/suite-cpu.log):

    suite NAME: 1467 s wall, 1210 CPU-s (0.82 cores), exit 0

Where the machine has no writable cpuacct hierarchy, the command runs as it is and the line says
"CPU not measured". Exits with the command's status.

--cpu-shares N also puts the suite in a cpu control group of its own, right under the root
(/sys/fs/cgroup/cpu/k3-suite-NAME: a weight counts only against its siblings, and the other
suites' processes are in the root group), with that weight (cgroup v1 cpu.shares; a process
outside any group weighs 1024, as a group without a weight does): on a core that both want, the
suite gets N/(N+1024) of it. make test gives the table-driven suites a low weight, so that the
suites with test hosts beside them (whose services' waits are timed, and whose deployments cost
processor time for every second they run) take what they need and the table-driven tests take the
rest. Where there is no writable cpu hierarchy the suite runs without a weight.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path("/sys/fs/cgroup/cpuacct")
CPU_ROOT = Path("/sys/fs/cgroup/cpu")


def make_group(name):
    """The suite's control group, or None where there is none to make."""
    group = ROOT / "k3-suites" / name
    try:
        group.mkdir(parents=True, exist_ok=True)
        (group / "cpuacct.usage").write_text("0\n")  # a group left by an earlier run starts again
    except OSError:
        return None
    return group


def make_weighted_group(name, shares):
    """The suite's cpu control group with ``shares`` as its weight, or None where there is none."""
    group = CPU_ROOT / ("k3-suite-" + name)
    try:
        group.mkdir(parents=True, exist_ok=True)
        (group / "cpu.shares").write_text("%d\n" % shares)
    except OSError:
        return None
    return group


def join(*groups):
    """Move the calling process into each of ``groups`` (run in the child, before exec)."""
    for group in groups:
        if group:
            (group / "tasks").write_text("%d\n" % os.getpid())


def usage_seconds(group):
    return int((group / "cpuacct.usage").read_text()) / 1e9


def line(name, wall, cpu, status):
    if cpu is None:
        return "suite %s: %.0f s wall, CPU not measured, exit %d" % (name, wall, status)
    return "suite %s: %.0f s wall, %.0f CPU-s (%.2f cores), exit %d" % (name, wall, cpu, cpu / max(wall, 1e-9), status)


def main(argv):
    shares = None
    if argv[1:2] == ["--cpu-shares"] and len(argv) > 2 and argv[2].isdigit():
        shares, argv = int(argv[2]), argv[:1] + argv[3:]
    if len(argv) < 3 or argv[1].startswith("-"):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    name, command = argv[1], argv[2:]
    group = make_group(name)
    weighted = make_weighted_group(name, shares) if shares else None
    started = time.monotonic()
    joins = (lambda: join(group, weighted)) if group or weighted else None  # the child's PID into its groups
    proc = subprocess.Popen(command, preexec_fn=joins)  # noqa: PLW1509
    status = proc.wait()
    wall = time.monotonic() - started
    cpu = usage_seconds(group) if group else None
    text = line(name, wall, cpu, status if status >= 0 else 128 - status)
    print(text, flush=True)
    log = Path(os.environ.get("K3_SUITE_CPU", ".cache/suite-cpu.log"))
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("a", encoding="utf-8") as out:
            out.write(text + "\n")
    except OSError:
        pass
    for made in {g for g in (group, weighted) if g}:  # one folder where cpu and cpuacct are mounted together
        try:
            made.rmdir()  # fails while a process of the suite lives on (it is counted until then)
        except OSError:
            pass
    return status if status >= 0 else 128 - status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
