"""A line per test start and end in the file named by K3_TEST_PROGRESS (none when it is unset).

make test runs its suites side by side and prints each one whole when it ends; this file is what
tools/ci_watch.py reads to say, while they run, which tests are running and for how long.
Every pytest-xdist worker appends to the same file, one short line per write. A ``cpu`` line gives
the processor seconds a test took in the test process and the children it waited for (Ansible's
runs, the servers its fixtures stopped): what tools/ci_watch.py --summary ranks. Under make test's
tools/suite_cpu.py a ``suitecpu`` line gives the suite's control group's processor seconds over the
test: everything the suite ran meanwhile, its test hosts' services included (with pytest-xdist,
the other worker's tests too). A ``run`` line per command that tests/helpers/ansible_run.py runs
(Ansible's playbooks, the sandbox's tools) gives the suite's processor seconds over it (its own
and its children's where no suite counter exists), its wall time and the test it ran in: which of a
test's playbook runs cost what. A command is named by its program, its playbook and its long options,
never by the values it was given (an -e value may hold a key).
"""

from __future__ import annotations

import os
import resource
import time
from pathlib import Path

PROGRESS = os.environ.get("K3_TEST_PROGRESS")
_state = {"write": True}


def pytest_configure(config):
    # Under pytest-xdist the controlling process sees every worker's tests again: only the process
    # that runs a test (a worker, or pytest without workers) writes its lines.
    numprocesses = getattr(config.option, "numprocesses", None)
    _state["write"] = bool(PROGRESS) and (hasattr(config, "workerinput") or not numprocesses)
    _state["counter"] = suite_counter() if _state["write"] else None


def _write(line):
    with open(PROGRESS, "a", encoding="utf-8") as out:
        out.write("%.0f %s\n" % (time.time(), line))


_started = {}
_suite_started = {}
_current = {"nodeid": ""}


def suite_counter(cgroup="/proc/self/cgroup", root="/sys/fs/cgroup/cpuacct"):
    """The cpuacct counter file of the control group the process is in (``cgroup``: its
    /proc/<pid>/cgroup) when it is one of tools/suite_cpu.py's (cgroup v1), else None."""
    try:
        lines = Path(cgroup).read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _number, controllers, path = line.split(":", 2)
        if "cpuacct" in controllers.split(",") and path.startswith("/k3-suites/"):
            return Path(root) / path.lstrip("/") / "cpuacct.usage"
    return None


def _suite_cpu():
    counter = _state.get("counter")
    try:
        return int(counter.read_text()) / 1e9 if counter else None
    except (OSError, ValueError):
        return None


def _cpu():
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def command_label(argv):
    """How a ``run`` line names ``argv``: the program's name, its first argument's (the playbook,
    the script) unless that is an option, and the long options (``--check``, ``--tags``), not their
    values."""
    words = [Path(str(a)).name for a in argv[:1]]
    if len(argv) > 1 and not str(argv[1]).startswith("-"):
        words.append(Path(str(argv[1])).name)
    words += [str(a) for a in argv[2:] if str(a).startswith("--") and "=" not in str(a)]
    return " ".join(words)


class timed:
    """``with timed(argv):`` writes a ``run`` line for the command when the block ends."""

    def __init__(self, argv):
        self.argv = argv

    def __enter__(self):
        self.started = (time.monotonic(), _cpu(), _suite_cpu())
        return self

    def __exit__(self, *exc):
        if _state.get("write"):
            wall, cpu, suite = self.started
            after = _suite_cpu()
            spent = after - suite if after is not None and suite is not None else _cpu() - cpu
            _write(
                "run %.1f %s (%.0f s) in %s"
                % (spent, command_label(self.argv), time.monotonic() - wall, _current["nodeid"] or "-")
            )
        return False


def pytest_runtest_logstart(nodeid, location):
    _current["nodeid"] = nodeid
    if _state["write"]:
        _started[nodeid] = _cpu()
        _suite_started[nodeid] = _suite_cpu()
        _write("start %s" % nodeid)


def pytest_runtest_logfinish(nodeid, location):
    if _state["write"]:
        _write("cpu %.1f %s" % (_cpu() - _started.pop(nodeid, _cpu()), nodeid))
        before, after = _suite_started.pop(nodeid, None), _suite_cpu()
        if before is not None and after is not None:
            _write("suitecpu %.1f %s" % (after - before, nodeid))
        _write("end %s" % nodeid)


def pytest_runtest_logreport(report):
    if _state["write"] and report.outcome == "failed":
        _write("failed %s (%s, %.0f s)" % (report.nodeid, report.when, report.duration))
