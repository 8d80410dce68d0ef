"""A line per test start and end in the file named by K3_TEST_PROGRESS (none when it is unset).

make test runs its suites side by side and prints each one whole when it ends; this file is what
tools/ci_watch.py reads to say, while they run, which tests are running and for how long.
Every pytest-xdist worker appends to the same file, one short line per write. A ``cpu`` line gives
the processor seconds a test took in the test process and the children it waited for (Ansible's
runs, the servers its fixtures stopped): what tools/ci_watch.py --summary ranks.
"""

from __future__ import annotations

import os
import resource
import time

PROGRESS = os.environ.get("K3_TEST_PROGRESS")
_state = {"write": True}


def pytest_configure(config):
    # Under pytest-xdist the controlling process sees every worker's tests again: only the process
    # that runs a test (a worker, or pytest without workers) writes its lines.
    numprocesses = getattr(config.option, "numprocesses", None)
    _state["write"] = bool(PROGRESS) and (hasattr(config, "workerinput") or not numprocesses)


def _write(line):
    with open(PROGRESS, "a", encoding="utf-8") as out:
        out.write("%.0f %s\n" % (time.time(), line))


_started = {}


def _cpu():
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def pytest_runtest_logstart(nodeid, location):
    if _state["write"]:
        _started[nodeid] = _cpu()
        _write("start %s" % nodeid)


def pytest_runtest_logfinish(nodeid, location):
    if _state["write"]:
        _write("cpu %.1f %s" % (_cpu() - _started.pop(nodeid, _cpu()), nodeid))
        _write("end %s" % nodeid)


def pytest_runtest_logreport(report):
    if _state["write"] and report.outcome == "failed":
        _write("failed %s (%s, %.0f s)" % (report.nodeid, report.when, report.duration))
