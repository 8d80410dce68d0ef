# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Collective tests of the fabric check: what nccl-tests, rccl-tests and CANN's hccl_test print.

Pure functions, no I/O: the module runs the commands and hands their output here.

nccl-tests and rccl-tests (``all_reduce_perf``, ``alltoall_perf``, ...) print the same table::

    # Collective test starting: all_reduce_perf
    #  Rank  0 Group  0 Pid   1584 on inst-vfj93-oke-rdma device  0 [0000:0f:00] NVIDIA A100-SXM4-40GB
    #       size         count      type   redop    root     time   algbw   busbw  #wrong     time ...
      1073741824     268435456     float     sum      -1  10785.4   99.56  186.67       0  10770.9 ...
    # Out of bounds values : 0 OK
    # Avg bus bandwidth    : 189.005

A row holds size (bytes), count, type, redop, root, then time (us), algbw and busbw (GB/s) and
#wrong twice: out-of-place, then in-place. The quirks the recorded outputs show, all tolerated:

* the column widths changed between versions (``busbw #wrong`` with one or two spaces, ``#wrong``
  cells as ``%6g`` or ``%7g``), the header pads with trailing spaces or not at all;
* ``N/A`` for the in-place #wrong of alltoall, and rows of size 0 (small sizes split over the ranks);
* the device lines with or without ``Group`` (older rccl-tests), with any GPU name or none
  (``AMD Radeon Graphics`` for an MI355X): only ``Rank N`` and ``on HOST`` are read;
* ranks elided by an author (ranks is then the highest rank + 1);
* noise before and inside the table: job-script echoes, kubectl's ``Defaulted container`` and ssh's
  ``Warning: Permanently added`` lines, UCX warnings, Open MPI help text (even between the header and
  the first row), ``NCCL version``/``RCCL version`` blocks, ``# Testing 1 cycle.``, blank lines;
* a failure: ``HOST: Test CUDA failure FILE:LINE 'message'`` (or HIP, NCCL), then
  `` .. HOST pid PID: Test failure FILE:LINE`` per frame; it may cut a row short, the failure text
  continuing on the row's line.

CANN's hccl_test (``all_reduce_test`` and the other ``*_test`` programs) prints its own table, its
header and rows with ``|`` between the cells (``print_execution_time`` in hicann/oam-tools
``src/hccl_test/common/src/hccl_opbase_rootinfo_base.cc``)::

    data_size(Bytes): | aveg_time(us): | alg_bandwidth(GB/s): | check_result:
    8192              | 29.85          | 0.27444              | success

``check_result`` is ``success``, ``failed``, or ``NULL`` when the check is off (``-c 0``, or a data type
that would overflow). A failing rank adds ``local rank_id N, check result failed, <row>``. An HCCL or
ACL call that fails prints ``hccl interface return err FILE:LINE, retcode: N `` and the step it broke,
``This is an error in init_hcclComm.`` (retcode 7 there: a peer still runs an old hccl_test, per
hccl_test's FAQ).
"""

from __future__ import annotations

import re

from ansible_collections.kimi_k3.serving.plugins.module_utils.fabric_text import first_match, to_float, to_int

MAX_ERRORS = 10

_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_WRONG = r"N/A|[-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?\*?"
_ROW_HEAD = r"^\s*(?P<size>\d+)\s+(?P<count>\d+)\s+(?P<type>[A-Za-z]\w*)\s+(?P<redop>[A-Za-z]\w*)"
_ROW = re.compile(
    _ROW_HEAD + r"(?:\s+(?P<root>-?\d+))?"
    rf"\s+(?P<time_us>{_NUM})\s+(?P<algbw>{_NUM})\s+(?P<busbw>{_NUM})\s+(?P<wrong>{_WRONG})"
    rf"\s+(?P<ip_time_us>{_NUM})\s+(?P<ip_algbw>{_NUM})\s+(?P<ip_busbw>{_NUM})\s+(?P<ip_wrong>{_WRONG})\s*$"
)
_ROW_START = re.compile(_ROW_HEAD + r"(?:\s|$)")
_RANK = re.compile(r"^#\s*Rank\s+(?P<rank>\d+)\b.*?\bon\s+(?P<host>\S+)\s+device\b")
_TEST = re.compile(r"^#\s*Collective test (?:starting|concluded):\s*(?P<test>\S+)")
_AVG = re.compile(rf"^#\s*Avg bus bandwidth\s*:\s*(?P<avg>{_NUM})")
_BOUNDS = re.compile(r"^#\s*Out of bounds values\s*:\s*(?P<count>\d+)")
_FAILURE = re.compile(r"(?P<host>[^\s:]+):\s+Test\s+(?P<kind>[A-Za-z]+)\s+failure\s+(?P<where>\S+)\s*(?P<what>.*)$")
_TRACE = re.compile(r"^\s*\.\.\s+\S+\s+pid\s+\d+:\s+Test failure\b")

_FLOATS = ("time_us", "algbw", "busbw", "ip_time_us", "ip_algbw", "ip_busbw")


# --------------------------------------------------------------------------------- nccl-tests / rccl-tests
def parse_collective(text: str | None) -> dict:
    """What an nccl-tests or rccl-tests run printed: ``{test, ranks, hosts, rows, avg_busbw,
    out_of_bounds, errors, failed, cause}``.

    ``rows`` are the complete table rows in their order (``size``, ``count``, ``type``, ``redop``, ``root``,
    ``time_us``, ``algbw``, ``busbw``, ``wrong``, ``ip_time_us``, ``ip_algbw``, ``ip_busbw``, ``ip_wrong``;
    bandwidths in GB/s as printed, ``wrong`` None for ``N/A``). ``failed`` with a ``cause`` sentence
    on a CUDA/HIP/NCCL failure, a row cut short, wrong values, out-of-bounds values or no table.
    """
    lines = (text or "").splitlines()
    rows, cut = _table(lines)
    ranks = _ranks(lines)
    found = {
        "test": _first(_TEST, lines, "test"),
        "ranks": max(ranks) + 1 if ranks else 0,
        "hosts": sorted(set(ranks.values())),
        "rows": rows,
        "avg_busbw": to_float(_first(_AVG, lines, "avg")),
        "out_of_bounds": to_int(_first(_BOUNDS, lines, "count")),
        "errors": _errors(lines),
    }
    cause = _cause(found, cut, first_match(_FAILURE, lines))
    found.update(failed=cause is not None, cause=cause)
    return found


def row_at(rows: list[dict], size: int, key: str = "size") -> dict | None:
    """The row of exactly ``size`` bytes, else the largest row below it, else None (the last one printed
    when a size repeats, as in a run of several cycles). ``key``: the rows' size field (perftest's
    rows call it ``bytes``)."""
    below = [r for r in rows if r[key] <= size]
    if not below:
        return None
    largest = max(r[key] for r in below)
    return [r for r in below if r[key] == largest][-1]


def _first(pattern, lines, group):
    """The ``group`` of the first line ``pattern`` matches, or None."""
    match = first_match(pattern, lines)
    return match.group(group) if match else None


def _ranks(lines):
    """{rank: host} of the ``# Rank N ... on HOST device ...`` lines."""
    found = {}
    for line in lines:
        match = _RANK.match(line)
        if match:
            found[int(match.group("rank"))] = match.group("host")
    return found


def _table(lines):
    """The complete rows, and the size of the first row cut short (None when none is)."""
    rows, cut = [], None
    for line in lines:
        match = _ROW.match(line)
        if match:
            rows.append(_row(match))
        elif cut is None and _ROW_START.match(line):
            cut = int(_ROW_START.match(line).group("size"))
    return rows, cut


def _row(match):
    """One table row: numbers as numbers, ``N/A`` as None."""
    row = {
        "size": int(match.group("size")),
        "count": int(match.group("count")),
        "type": match.group("type"),
        "redop": match.group("redop"),
        "root": to_int(match.group("root")),
        "wrong": _wrong(match.group("wrong")),
        "ip_wrong": _wrong(match.group("ip_wrong")),
    }
    row.update((key, float(match.group(key))) for key in _FLOATS)
    return row


def _wrong(cell):
    """A #wrong cell: ``0``, ``96``, ``1e+06`` or an rccl-tests ``12*`` as an int, ``N/A`` as None."""
    if cell == "N/A":
        return None
    return int(float(cell.rstrip("*")))


def _errors(lines):
    """The failure lines (``Test CUDA failure`` and the `` .. pid: Test failure`` frames), stripped,
    each once, in order, at most MAX_ERRORS."""
    found = []
    for line in lines:
        error = _error_of(line)
        if error and error not in found:
            found.append(error)
    return found[:MAX_ERRORS]


def _error_of(line):
    """The failure a line holds, from its host on (a row cut short keeps its cells before it), or None."""
    match = _FAILURE.search(line)
    if match:
        return line[match.start() :].strip()
    return line.strip() if _TRACE.match(line) else None


def _cause(found, cut, failure):
    """One sentence on why the run failed, or None when it passed."""
    rows = found["rows"]
    if failure:
        return _failure_cause(failure, cut)
    wrong = [r for r in rows if (r["wrong"] or 0) > 0 or (r["ip_wrong"] or 0) > 0]
    if wrong:
        return _wrong_cause(wrong, found["out_of_bounds"])
    if cut is not None:
        return "the %d B row was cut short%s" % (cut, ": " + found["errors"][0] if found["errors"] else "")
    if found["out_of_bounds"]:
        return "%d out-of-bounds values (the test reports FAILED)" % found["out_of_bounds"]
    if found["errors"]:
        return "test failure: %s" % found["errors"][0]
    if not rows:
        return "no result table in the output"
    return None


def _failure_cause(failure, cut):
    """``CUDA failure on node0 at common.cu:389: 'an illegal memory access was encountered'``, and the
    row it cut short."""
    what = failure.group("what").strip()
    text = "%s failure on %s at %s" % (failure.group("kind"), failure.group("host"), failure.group("where"))
    text += ": " + what if what else ""
    return text + (" (the %d B row was cut short)" % cut if cut is not None else "")


def _wrong_cause(wrong, out_of_bounds):
    """``96 wrong values at 1048576 B (out-of-place) and 32 (in-place), 4 out-of-bounds values in all``."""
    first = wrong[0]
    in_place = "N/A" if first["ip_wrong"] is None else first["ip_wrong"]
    text = "%d wrong values at %d B (out-of-place) and %s (in-place)" % (first["wrong"] or 0, first["size"], in_place)
    if len(wrong) > 1:
        text += ", and wrong values in %d more rows" % (len(wrong) - 1)
    if out_of_bounds is not None:
        text += ", %d out-of-bounds values in all" % out_of_bounds
    return text


# ------------------------------------------------------------------------------------------------ hccl_test
_HCCL_ROW = re.compile(
    rf"^\s*(?P<size>\d+)\s*\|\s*(?P<time_us>{_NUM})\s*\|\s*(?P<algbw>{_NUM})\s*\|\s*(?P<check>\S+)\s*$"
)
_HCCL_RETCODE = re.compile(r"\b(?P<api>hccl|acl) interface return err\s+(?P<where>\S+?),?\s+retcode:\s*(?P<code>-?\d+)")
_HCCL_STEP = re.compile(r"\bThis is an error in (?P<step>\w+)")
_HCCL_RANK_FAILED = re.compile(r"\blocal rank_id (?P<rank>\d+), check result failed,\s*(?P<size>\d+)")
_HCCL_ERROR = re.compile(r"\b(?:err|error|Error|ERROR|failed|FAILED)\b")


def parse_hccl_test(text: str | None) -> dict:
    """What a CANN hccl_test run printed: ``{rows, errors, failed, cause}``.

    ``rows``: ``size`` (bytes), ``time_us``, ``algbw`` (GB/s, hccl_test's decimal GB) and ``check``
    (``success``, ``failed``, ``NULL``) of the root rank's table. ``failed`` with a ``cause`` sentence
    on a failed HCCL/ACL call (its retcode and step), a check_result other than success or NULL (its
    size), another error line, or no table.
    """
    lines = (text or "").splitlines()
    rows = [_hccl_row(m) for m in (_HCCL_ROW.match(line) for line in lines) if m]
    errors = _hccl_errors(lines)
    cause = _hccl_cause(lines, rows, errors)
    return {"rows": rows, "errors": errors, "failed": cause is not None, "cause": cause}


def _hccl_row(match):
    return {
        "size": int(match.group("size")),
        "time_us": float(match.group("time_us")),
        "algbw": float(match.group("algbw")),
        "check": match.group("check"),
    }


def _hccl_errors(lines):
    """The error lines outside the table, stripped, each once, in order, at most MAX_ERRORS."""
    found = []
    for line in lines:
        if _HCCL_ROW.match(line) or not _HCCL_ERROR.search(line):
            continue
        if line.strip() not in found:
            found.append(line.strip())
    return found[:MAX_ERRORS]


def _hccl_cause(lines, rows, errors):
    """One sentence on why the run failed, or None when it passed."""
    retcode = first_match(_HCCL_RETCODE, lines)
    if retcode:
        step = first_match(_HCCL_STEP, lines)
        where = " in %s" % step.group("step") if step else ""
        return "hccl_test failed%s: an %s call returned retcode %s (%s)" % (
            where,
            retcode.group("api").upper(),
            retcode.group("code"),
            retcode.group("where"),
        )
    bad = [r for r in rows if r["check"] not in ("success", "NULL")]
    if bad:
        return "check_result %s at %d B" % (bad[0]["check"], bad[0]["size"])
    rank = first_match(_HCCL_RANK_FAILED, lines)
    if rank:
        return "check_result failed at %s B on rank %s" % (rank.group("size"), rank.group("rank"))
    if errors:
        return "hccl_test error: %s" % errors[0]
    if not rows:
        return "no result table in the output"
    return None
