#!/usr/bin/env python3
"""The rolling restart's wall time against its floor, from restart.yml's own task timings.

    .venv/ansible/bin/python tools/bench_rolling.py -i inventories/sandbox-ha [ansible-playbook args...]

Runs playbooks/restart.yml once with the ansible.posix.json callback and reads each task's start
and end. The floor is what no orchestration can save: per batch, the time its engines take to
restart and become healthy (the batch's "Restart ..." and "Healthy again" tasks: the slowest
engine of the batch, since the health waits of a batch overlap), summed over the batches. The
rest of the wall time is the collection's own: the plan, taking a group out of its front door,
the drain (its grace pause included), putting it back. Prints one JSON line.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BATCH = re.compile(r"\(batch (\d+)\)$")
FLOOR_TASKS = ("Restart node 0 of each group", "Restart the nodes that join them", "Healthy again")


def seconds(stamp):
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def main(argv):
    env = dict(
        os.environ,
        ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
        ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
        ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
    )
    started = time.monotonic()
    proc = subprocess.run(
        [str(ROOT / ".venv" / "ansible" / "bin" / "ansible-playbook"), "playbooks/restart.yml", *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.monotonic() - started
    if proc.returncode:
        sys.exit("restart.yml failed (%d):\n%s\n%s" % (proc.returncode, proc.stdout[-4000:], proc.stderr[-2000:]))
    out = ROOT / ".cache" / "bench"
    out.mkdir(parents=True, exist_ok=True)
    (out / "rolling-restart.json").write_text(proc.stdout)
    # The callback's report is the one JSON document of stdout; a line printed before it (a prompt,
    # a warning) is not part of it.
    start = proc.stdout.find("\n{") + 1 if not proc.stdout.startswith("{") else 0
    report = json.loads(proc.stdout[start:])
    per_batch = {}
    for play in report["plays"]:
        for task in play["tasks"]:
            name = task["task"]["name"]
            match = BATCH.search(name)
            if not match or not name.startswith(FLOOR_TASKS):
                continue
            span = task["task"]["duration"]
            took = seconds(span["end"]) - seconds(span["start"])
            per_batch[int(match.group(1))] = per_batch.get(int(match.group(1)), 0.0) + took
    floor = sum(per_batch.values())
    print(
        json.dumps(
            {
                "batches": len(per_batch),
                "wall_s": round(wall, 1),
                "floor_s": round(floor, 1),
                "ratio": round(wall / floor, 2) if floor else None,
                "per_batch_floor_s": {k: round(v, 1) for k, v in sorted(per_batch.items())},
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1:])
