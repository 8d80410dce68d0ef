# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""How far a transfer into a folder has come: bytes, rate and time left, kept in a progress log.

A transfer (a hub's client fetching a checkpoint, aria2c receiving it) writes into a folder; what
it has written is the bytes its files hold on disk (their allocated blocks, capped at their size:
aria2c writes pieces into sparse files, a hub's client into growing ``.incomplete`` files). Each
reading is appended to the transfer's progress log (JSON lines) with the job it belongs to, so
the rate is taken over the whole job so far (steady where one interval is not) and the log is the
run's record of the transfer.
"""

from __future__ import annotations

import json
import os

UNITS = ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB"))


def bytes_in(folder):
    """Bytes the files under ``folder`` hold on disk (0 when it is not there yet)."""
    total = 0
    for parent, _dirs, names in os.walk(folder):
        for name in names:
            try:
                stat = os.lstat(os.path.join(parent, name))
            except OSError:
                continue  # moved or removed by the transfer while this reads
            total += min(stat.st_blocks * 512, stat.st_size)
    return total


def first_sample(log, job):
    """The first reading of ``job`` in the progress log, or None."""
    try:
        with open(log) as handle:
            for line in handle:
                try:
                    sample = json.loads(line)
                except ValueError:
                    continue
                if sample.get("job") == job:
                    return sample
    except OSError:
        return None
    return None


def sample(first, job, now, done, total):
    """This reading: ``done`` of ``total`` bytes at ``now`` (seconds), with the rate since ``first``."""
    done = min(done, total)  # a transfer's own small files beside the data (control files, stamps)
    out = {"job": job, "time": round(now, 3), "bytes": done, "total": total, "rate": None, "left": None}
    if first and now > first["time"] and done > first["bytes"]:
        rate = (done - first["bytes"]) / (now - first["time"])
        out["rate"] = round(rate, 1)
        out["left"] = round(max(total - done, 0) / rate, 1)
    return out


def size_text(count):
    for factor, unit in UNITS:
        if count >= factor:
            return "%.1f %s" % (count / factor, unit)
    return "%d B" % count


def duration_text(seconds):
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return "%d h %02d min" % (hours, minutes)
    if minutes:
        return "%d min %02d s" % (minutes, seconds)
    return "%d s" % seconds


def line(name, reading):
    """``model: 1.2 GB of 2.0 GB (60 %), 230.0 MB/s, 4 s left`` (rate and time once two readings exist)."""
    total = reading["total"]
    percent = 100.0 * reading["bytes"] / total if total else 100.0
    text = "%s: %s of %s (%d %%)" % (name, size_text(reading["bytes"]), size_text(total), min(percent, 100))
    if reading["rate"]:
        text += ", %s/s, %s left" % (size_text(reading["rate"]), duration_text(reading["left"]))
    return text


def record(log, reading):
    """Append ``reading`` to the progress log (its folder made, owner-only)."""
    os.makedirs(os.path.dirname(log), mode=0o700, exist_ok=True)
    with open(log, "a") as handle:
        handle.write(json.dumps(reading, sort_keys=True) + "\n")
