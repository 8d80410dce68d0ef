#!/usr/bin/env python3
"""Watch a run of make test: say every few minutes which tests are running, and stop it at a budget.

    tools/ci_watch.py PID PROGRESS_FILE BUDGET_SECONDS [INTERVAL_SECONDS]
    tools/ci_watch.py --summary PROGRESS_FILE

make test prints each suite whole when it ends (make -O), so a run stopped from outside shows
nothing of the suites still running. This prints, every INTERVAL (600 s), the tests running now
and how long each has run (from the lines tests/helpers/progress.py writes). At BUDGET it ends the
process group of PID, then prints the running tests, the last lines of the progress file and the
run's commands as they were: the run fails saying what it was doing, instead of being cut off
with nothing said. Exits 0 when PID ends first, 3 when it stopped the run. --summary prints
the tests that took the most processor time (theirs and their children's), then those over which
their suite took the most (its test hosts included), then the commands the tests ran (Ansible's
playbooks, the sandbox's tools) over which their suite took the most, for speed work.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def _lines(progress):
    try:
        return Path(progress).read_text(encoding="utf-8").splitlines()
    except OSError:
        return []


def running(lines, now):
    """The tests started and not ended, each with the seconds it has run, longest first."""
    started = {}
    for line in lines:
        stamp, _, rest = line.partition(" ")
        kind, _, nodeid = rest.partition(" ")
        if kind == "start":
            started[nodeid] = float(stamp)
        elif kind == "end":
            started.pop(nodeid, None)
    return sorted(((now - at, nodeid) for nodeid, at in started.items()), reverse=True)


def commands(pgid):
    """(seconds running, command line) of every process in the process group ``pgid``, longest first."""
    ps = subprocess.run(["ps", "-eo", "pgid=,etimes=,args="], capture_output=True, text=True, check=False).stdout
    found = []
    for line in ps.splitlines():
        fields = line.split(None, 2)
        if len(fields) == 3 and fields[0] == str(pgid):
            found.append((int(fields[1]), fields[2]))
    return sorted(found, reverse=True)


def heaviest(lines, count=15, kind="cpu"):
    """(processor seconds, test) of the ``count`` tests that took the most, most first: ``kind`` cpu,
    the test's own and its children's; suitecpu, its suite's over the test; run, a command's."""
    found = []
    for line in lines:
        fields = line.split(" ", 3)
        if len(fields) == 4 and fields[1] == kind:
            found.append((float(fields[2]), fields[3]))
    return sorted(found, reverse=True)[:count]


def _alive(pid):
    """Whether ``pid`` still runs (a zombie, ended but not yet reaped by its parent, does not)."""
    try:
        stat = Path("/proc/%d/stat" % pid).read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def report(progress, started_at, final, pgid):
    """What the run is doing now, as lines: the running tests; at the end also the last progress
    lines and the run's commands (kept short: CI shows only the end of its output)."""
    now = time.time()
    lines = _lines(progress)
    out = ["ci_watch: %d s into make test" % (now - started_at)]
    out += ["ci_watch:   running for %4d s: %s" % (seconds, nodeid) for seconds, nodeid in running(lines, now)]
    if final:
        out.append("ci_watch: the last lines of %s:" % progress)
        out += ["ci_watch:   " + line for line in lines[-12:]]
        out.append("ci_watch: the run's commands (seconds running, command), the longest first:")
        out += ["ci_watch:   %6d %s" % (seconds, command[:240]) for seconds, command in commands(pgid)[:12]]
    return out


def _stop(pid):
    """End the process group, and wait (up to two minutes) for its leader to be gone."""
    for sig, wait in ((signal.SIGTERM, 60), (signal.SIGKILL, 60)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.time() + wait
        while _alive(pid) and time.time() < deadline:
            time.sleep(1)
        if not _alive(pid):
            return


def main(argv):
    if argv[1] == "--summary":
        lines = _lines(argv[2])
        print("ci_watch: the tests that took the most processor time (with their children):")
        for seconds, nodeid in heaviest(lines):
            print("ci_watch: %7.1f s  %s" % (seconds, nodeid))
        suite = heaviest(lines, 25, "suitecpu")
        if suite:
            print("ci_watch: the tests over which their suite took the most (its test hosts included):")
            for seconds, nodeid in suite:
                print("ci_watch: %7.1f s  %s" % (seconds, nodeid))
        runs = heaviest(lines, 25, "run")
        if runs:
            print("ci_watch: the commands over which their suite took the most (wall time, test):")
            for seconds, command in runs:
                print("ci_watch: %7.1f s  %s" % (seconds, command))
        return 0
    pid, progress, budget = int(argv[1]), argv[2], float(argv[3])
    interval = float(argv[4]) if len(argv) > 4 else 600.0
    started_at = time.time()
    next_report = started_at + interval
    while _alive(pid):
        now = time.time()
        if now - started_at >= budget:
            # Seen before the stop (its commands are gone after it), printed after it: what make
            # prints as it ends comes first, and this report is the end of the output.
            lines = report(progress, started_at, True, pid)
            _stop(pid)
            print("ci_watch: make test was still running after its budget of %d s; stopped it" % budget)
            print("\n".join(lines), flush=True)
            return 3
        if now >= next_report:
            print("\n".join(report(progress, started_at, False, pid)), flush=True)
            next_report += interval
        time.sleep(min(5.0, budget / 10))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
