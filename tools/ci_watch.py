#!/usr/bin/env python3
"""Watch a run of make test: say every few minutes which tests are running, and stop it at a budget.

    tools/ci_watch.py PID PROGRESS_FILE BUDGET_SECONDS [INTERVAL_SECONDS]

make test prints each suite whole when it ends (make -O), so a run stopped from outside shows
nothing of the suites still running. This prints, every INTERVAL (600 s), the tests running now
and how long each has run (from the lines tests/helpers/progress.py writes). At BUDGET it prints
the running tests, the last lines of the progress file and the commands of the run still running,
then ends the process group of PID: the run fails with what it was doing, instead of being cut
off with nothing said. Exits 0 when PID ends first, 3 when it stopped the run.
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


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _report(progress, started_at, final, pgid):
    now = time.time()
    print("ci_watch: %d s into make test" % (now - started_at), flush=True)
    lines = _lines(progress)
    for seconds, nodeid in running(lines, now):
        print("ci_watch:   running for %4d s: %s" % (seconds, nodeid), flush=True)
    if final:
        print("ci_watch: the last lines of %s:" % progress, flush=True)
        for line in lines[-40:]:
            print("ci_watch:   " + line, flush=True)
        print("ci_watch: the run's commands (seconds running, command), the longest first:", flush=True)
        for seconds, command in commands(pgid)[:40]:
            print("ci_watch:   %6d %s" % (seconds, command[:300]), flush=True)


def main(argv):
    pid, progress, budget = int(argv[1]), argv[2], float(argv[3])
    interval = float(argv[4]) if len(argv) > 4 else 600.0
    started_at = time.time()
    next_report = started_at + interval
    while _alive(pid):
        now = time.time()
        if now - started_at >= budget:
            print("ci_watch: make test is still running after its budget of %d s; stopping it" % budget, flush=True)
            _report(progress, started_at, final=True, pgid=pid)
            try:
                os.killpg(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            return 3
        if now >= next_report:
            _report(progress, started_at, final=False, pgid=pid)
            next_report += interval
        time.sleep(min(5.0, budget / 10))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
