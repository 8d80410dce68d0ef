# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Fabric acceptance: what the vendor tools' results mean against their thresholds.

Each check (:func:`._fabric_tools.checks`) has a result from its host (``fabric_tool``'s parsed
output). A tool's own failure (a ``#wrong`` count, an error instead of a table, a link DOWN, a
net_health other than Success, a lost ping) fails the check with the tool's cause; a figure below its
threshold (bus bandwidth at a message size, perftest's bandwidth as a share of the line rate,
latency above a ceiling) fails it naming the figure and the threshold. Every failure names the group
or pair and why the plan connects it. Pure functions: no I/O.
"""

from __future__ import annotations

import re

from ansible_collections.kimi_k3.serving.plugins.module_utils.fabric_collective import row_at

_SIZE = re.compile(r"^\s*(\d+)\s*([KMG]?)\s*$", re.IGNORECASE)
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def size_bytes(value):
    """``8G`` -> 8589934592, ``64K`` -> 65536, ``2`` -> 2 (the tools' own size notation)."""
    match = _SIZE.match(str(value))
    if not match:
        raise ValueError("not a message size: %r (a number of bytes, or with K, M or G)" % (value,))
    return int(match.group(1)) * _UNITS[match.group(2).upper()]


def human_size(size):
    """8589934592 -> ``8 GiB``, 65536 -> ``64 KiB``, 2 -> ``2 B``."""
    for unit, name in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if size >= unit and size % unit == 0:
            return "%d %s" % (size // unit, name)
    return "%d B" % size


def threshold_of(check, settings):
    """The threshold of a check, or None: ``{kind, value, at, source}`` (kind min_busbw, min_algbw,
    min_gbps or max_usec)."""
    table = settings.get("thresholds") or {}
    test = check["test"]
    if check["kind"] == "collective":
        found = ((table.get(check.get("platform")) or {}).get(check.get("interconnect")) or {}).get(test)
        return _limit(found, "min_busbw")
    if check["kind"] == "hccl":
        return _limit(((table.get("ascend") or {}).get("any") or {}).get(test), "min_algbw")
    if check["kind"] == "rdma":
        found = (table.get("rdma") or {}).get(test)
        if found and "max_usec" in found:
            return _limit(found, "max_usec")
        line = settings.get("line_rate_gbps")
        if found and line:
            return {
                "kind": "min_gbps",
                "value": round(float(found["min_share"]) * line, 2),
                "at": size_bytes(found["at"]),
                "source": "%s of the line rate %s Gbit/s: %s" % (found["min_share"], line, found.get("source")),
            }
    return None


def _limit(found, kind):
    if not found or kind not in found:
        return None
    return {"kind": kind, "value": float(found[kind]), "at": size_bytes(found["at"]), "source": found.get("source")}


_FIGURES = {
    # kind -> (row field, unit, what, whether a larger figure is better)
    "min_busbw": ("busbw", "GB/s", "bus bandwidth", True),
    "min_algbw": ("algbw", "GB/s", "algorithm bandwidth", True),
    "min_gbps": ("avg_gbps", "Gbit/s", "average bandwidth", True),
    "max_usec": ("t_typical", "us", "typical latency", False),
}


def _figure(parsed, limit):
    """(figure, size) read at the threshold's message size, or (None, None)."""
    size_key = "bytes" if limit["kind"] in ("min_gbps", "max_usec") else "size"  # perftest's rows
    row = row_at(parsed.get("rows") or [], limit["at"], size_key)
    if row is None:
        return None, None
    return row.get(_FIGURES[limit["kind"]][0]), row[size_key]


def _tool_failure(check, result):
    """The tool's own failure (as its host's runner read it), or None."""
    if check.get("error"):
        return check["error"]
    if result is None:
        return "not run (its host did not report)"
    if result.get("failed") or result.get("missing"):
        return result.get("cause") or "the tool failed (exit %s)" % result.get("rc")
    return None


def judge(check, result, settings):
    """One check's row: ``{name, test, subject, why, passed, skipped, figure, unit, at, threshold,
    source, cause}``; ``problem`` is the sentence to report when it did not pass."""
    row = {
        "name": check["name"],
        "test": check["test"],
        "subject": check["subject"],
        "why": check["why"],
        "host": check["host"],
        "passed": False,
        "skipped": False,
        "figure": None,
        "unit": None,
        "at": None,
        "threshold": None,
        "source": None,
        "cause": None,
    }
    if check.get("optional") and result and result.get("missing"):
        return dict(row, passed=True, skipped=True, cause=result.get("cause"))
    cause = _tool_failure(check, result)
    limit = threshold_of(check, settings) if cause is None else None
    if limit:
        figure, at = _figure(result.get("parsed") or {}, limit)
        unit, what, larger = _FIGURES[limit["kind"]][1:]
        row.update(threshold=limit["value"], unit=unit, source=limit["source"], figure=figure, at=at)
        if figure is None:
            cause = "no %s row at or below %s in the output" % (what, human_size(limit["at"]))
        elif (figure < limit["value"]) if larger else (figure > limit["value"]):
            cause = "%s %s %s at %s, %s the threshold %s %s" % (
                what,
                _number(figure),
                unit,
                human_size(at),
                "below" if larger else "above",
                _number(limit["value"]),
                unit,
            )
    row["cause"] = cause
    row["passed"] = cause is None
    if cause:
        row["problem"] = "%s: %s (%s): %s" % (check["test"], check["subject"], "; ".join(check["why"]), cause)
    return row


def _number(value):
    return ("%.2f" % value).rstrip("0").rstrip(".")


def report(tools, results):
    """Every check judged: ``{rows, problems, lines}``. ``results``: run name -> the host's result."""
    settings = dict(tools.get("settings") or {})
    rows = []
    for check in tools.get("checks") or []:
        check = dict(check, platform=tools.get("platform"), interconnect=tools.get("interconnect"))
        rows.append(judge(check, (results or {}).get(check["name"]), settings))
    problems = [r["problem"] for r in rows if not r["passed"]]
    lines = []
    if rows:
        lines.append("%-16s %-44s %14s %14s %6s" % ("TEST", "GROUP OR PAIR", "FIGURE", "THRESHOLD", "RESULT"))
        for r in rows:
            figure = "-" if r["figure"] is None else "%s %s" % (_number(r["figure"]), r["unit"])
            limit = "-" if r["threshold"] is None else "%s %s" % (_number(r["threshold"]), r["unit"])
            verdict = "skip" if r["skipped"] else ("pass" if r["passed"] else "FAIL")
            lines.append("%-16s %-44s %14s %14s %6s" % (r["test"], r["subject"], figure, limit, verdict))
    return {"rows": rows, "problems": problems, "lines": lines}


def outputs(results):
    """What each tool printed, one section per command: the run folder's tool-outputs.txt."""
    parts = []
    for result in results or []:
        if not isinstance(result, dict) or "name" not in result:
            continue
        argv = " ".join(result.get("argv") or [])
        parts.append("=== %s (exit %s)\n$ %s\n" % (result["name"], result.get("rc"), argv))
        parts.append((result.get("output") or result.get("cause") or "").rstrip("\n") + "\n\n")
    return "".join(parts)
