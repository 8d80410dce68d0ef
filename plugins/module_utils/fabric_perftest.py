# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""RDMA tests of the fabric check: what perftest's ``ib_write_bw``, ``ib_read_bw``, ``ib_write_lat`` (and
their send/atomic siblings) print.

Pure functions, no I/O: the module runs the commands and hands their output here.

perftest prints a title line (``RDMA_Write BW Test``, ``RDMA_Write Bidirectional BW Test`` with ``-b``,
``RDMA_Write Latency Test``), a block of ``key : value`` settings, two per line on some lines, then the
addresses and one table::

     #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
     65536      20000            98.01              98.01  \t\t   0.186932

The quirks the recorded outputs show, all tolerated:

* tabs or spaces between the cells and between the two settings of a line (``OFF\\t\\tDevice``), and the
  setting keys differ between builds (``Using DDP`` or ``Using Enhanced Reorder``): only ``Device``,
  ``Link type`` and ``Number of qps`` are read, wherever they stand;
* ``--report_gbits`` gives Gb/sec; without it the columns are ``[MB/sec]`` (``[MiB/sec]`` since perftest
  relabelled them in 2024): perftest divides the bytes per second by ``0x100000`` for them and by
  ``125000000`` for Gb/sec (``format_factor`` in ``print_report_bw``, linux-rdma/perftest
  ``src/perftest_parameters.c``), so a MB/sec figure is ``x * 1048576 * 8 / 1e9`` Gbit/s;
* the columns are read from the header's labels, not from fixed places (the latency table has nine,
  the duration-mode latency table four);
* ``--run_infinitely`` prints a row per period with no closing line and ``BW peak`` as 0.00 (after
  `` WARNING: BW peak won't be measured in this run.``);
* lines around the table: ``Using ROCm Device with ID: ...``, ``Waiting for client to connect...``,
  ``Connected:``/``Completed:`` dates, ``Total run time``, GPU buffer (de)allocation;
* a failed run prints ``Couldn't connect to HOST:PORT``, `` Unable to init the socket connection``,
  ``Failed to ...``, `` Completion with error at client`` and the like, and no table.
"""

from __future__ import annotations

import re

from ansible_collections.kimi_k3.serving.plugins.module_utils.fabric_text import first_match, to_int

MAX_ERRORS = 10

# perftest's MB is 2**20 bytes (format_factor 0x100000), its Gb is 10**9 bits (125000000 bytes).
_GBITS_PER_MB = 0x100000 * 8 / 1e9

_TESTS = {
    "Send": "ib_send",
    "Send_imm": "ib_send",
    "RDMA_Write": "ib_write",
    "RDMA_Write_imm": "ib_write",
    "RDMA_Read": "ib_read",
    "Atomic": "ib_atomic",
}
_TITLE = re.compile(r"^\s*(?P<verb>%s)\b(?P<middle>.*?)\b(?P<kind>BW|Latency)\b.*\bTest\s*$" % "|".join(_TESTS))
_DEVICE = re.compile(r"\bDevice\s*:\s*(?P<value>\S+)")
_LINK_TYPE = re.compile(r"\bLink type\s*:\s*(?P<value>\S+)")
_QPS = re.compile(r"\bNumber of qps\s*:\s*(?P<value>\d+)")
_HEADER = re.compile(r"^\s*#bytes\b")
_LABEL = re.compile(r"#\w+|(?:BW|MsgRate|t_\w+|99(?:\.9)?%\s*percentile)[^\[\]]*\[[^\]]*\]|tps average")
_UNIT = re.compile(r"\[(?P<unit>Gb|MB|MiB)/sec\]")
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$")
_ERROR = re.compile(
    r"\b(?:Couldn't|Could not|Unable to|Failed|Can't|Cannot|Completion with error|ERROR|Error|No such)\b"
    r"|\bnot found\b"
)

# Header labels -> row keys (labels without a key, like ``#sl`` or ``tps average``, are read and dropped).
_BW_KEYS = {
    "#bytes": "bytes",
    "#iterations": "iterations",
    "BW peak": "peak_gbps",
    "BW average": "avg_gbps",
    "MsgRate": "msg_rate_mpps",
}
_LAT_KEYS = {
    "#bytes": "bytes",
    "#iterations": "iterations",
    "t_min": "t_min",
    "t_max": "t_max",
    "t_typical": "t_typical",
    "t_avg": "t_avg",
    "t_stdev": "t_stdev",
    "99% percentile": "p99",
    "99.9% percentile": "p999",
}
_INTS = ("bytes", "iterations")


def parse_perftest(text: str | None) -> dict:
    """What a perftest run printed: ``{test, kind, device, link_type, qps, bidirectional, rows, errors,
    failed, cause}``.

    ``test`` is the program the title names (``ib_write_bw``, ``ib_read_bw``, ``ib_write_lat``, ...),
    ``kind`` ``"bw"`` or ``"lat"``. Bandwidth rows: ``bytes``, ``iterations``, ``peak_gbps``, ``avg_gbps``
    (Gbit/s, converted from MB/sec when the table is in MB/sec) and ``msg_rate_mpps``; latency rows:
    ``bytes``, ``iterations``, ``t_min``, ``t_max``, ``t_typical``, ``t_avg``, ``t_stdev``, ``p99``,
    ``p999`` in microseconds (None for a column the table lacks). ``failed`` with a ``cause`` on an
    error line or when there is no result row.
    """
    lines = (text or "").splitlines()
    title = first_match(_TITLE, lines)
    rows = _rows(lines)
    kind = _kind(title, rows)
    errors = _errors(lines)
    cause = _cause(rows, errors)
    return {
        "test": None if title is None else "%s_%s" % (_TESTS[title.group("verb")], kind),
        "kind": kind,
        "device": _value(_DEVICE, lines),
        "link_type": _value(_LINK_TYPE, lines),
        "qps": to_int(_value(_QPS, lines)),
        "bidirectional": bool(title and "Bidirectional" in title.group("middle")),
        "rows": rows,
        "errors": errors,
        "failed": cause is not None,
        "cause": cause,
    }


def _kind(title, rows):
    """``"bw"`` or ``"lat"`` as the title says, else as the table says, else None."""
    if title is not None:
        return "bw" if title.group("kind") == "BW" else "lat"
    if rows:
        return "bw" if "avg_gbps" in rows[0] else "lat"
    return None


def _value(pattern, lines):
    match = first_match(pattern, lines)
    return match.group("value") if match else None


def _rows(lines):
    """The rows under each ``#bytes`` header, keyed by the header's labels."""
    rows, labels, factor = [], None, 1.0
    for line in lines:
        if _HEADER.match(line):
            labels, factor = _labels(line), _factor(line)
            continue
        cells = line.split()
        if labels and len(cells) == len(labels) and all(_NUMBER.match(c) for c in cells):
            rows.append(_row(labels, cells, factor))
    return rows


def _labels(header):
    """The header's column labels without their units: ``["#bytes", "#iterations", "BW peak", ...]``."""
    return [" ".join(re.sub(r"\[[^\]]*\]$", "", label).split()) for label in _LABEL.findall(header)]


def _factor(header):
    """Gbit/s per unit of the header's bandwidth columns: 1 for Gb/sec, 2**20 * 8 / 1e9 for MB/sec."""
    unit = _UNIT.search(header)
    return _GBITS_PER_MB if unit and unit.group("unit") in ("MB", "MiB") else 1.0


def _row(labels, cells, factor):
    """One table row as ``{key: number}`` (a bandwidth row when the header has a ``BW`` column, else a
    latency row); bandwidths in Gbit/s."""
    keys = _BW_KEYS if any(label.startswith("BW ") for label in labels) else _LAT_KEYS
    row = dict.fromkeys(keys.values())
    for label, cell in zip(labels, cells, strict=True):
        key = keys.get(label)
        if key in _INTS:
            row[key] = int(float(cell))
        elif key in ("peak_gbps", "avg_gbps") and factor != 1.0:
            row[key] = round(float(cell) * factor, 3)
        elif key:
            row[key] = float(cell)
    return row


def _cause(rows, errors):
    """The first error line, else "no result rows in the output" when there is no row, else None."""
    if errors:
        return errors[0]
    return None if rows else "no result rows in the output"


def _errors(lines):
    """perftest's error lines, stripped, each once, in order, at most MAX_ERRORS."""
    found = []
    for line in lines:
        if _ERROR.search(line) and line.strip() not in found:
            found.append(line.strip())
    return found[:MAX_ERRORS]
