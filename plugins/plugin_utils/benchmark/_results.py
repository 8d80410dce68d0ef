# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The benchmark's results: the parsers of the load generators' raw outputs (vllm bench serve's
result JSON, AISBench's per-request CSV and common-metrics JSON), the normalised point they make,
and the normalised points a run folder holds."""

from __future__ import annotations

import csv
import io
import json
import os
import re

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.benchmark._common import (
    LATENCIES,
    PERCENTILES,
    VLLM_RESULT,
    BenchmarkError,
)

_UNIT = re.compile(r"^\s*(-?[0-9.eE+-]+)\s*([a-zA-Z/]*)\s*$")
_TO_MS = {"": 1.0, "ms": 1.0, "s": 1000.0, "us": 0.001, "μs": 0.001}
# AISBench's rows and columns of the per-request statistics, by the normalised point's names.
_AIS_ROWS = (("ttft_ms", "TTFT"), ("tpot_ms", "TPOT"), ("itl_ms", "ITL"), ("e2el_ms", "E2EL"))
_AIS_COLUMNS = {"mean": "Average", "p50": "Median", "p90": "P90", "p99": "P99"}


def _metrics_skeleton():
    return {lat: dict.fromkeys(PERCENTILES) for lat in LATENCIES}


def parse_vllm_bench(text, what="vllm bench serve result"):
    """The metrics of a ``vllm bench serve --save-result`` JSON (with --percentile-metrics
    ttft,tpot,itl,e2el --metric-percentiles 50,90,99)."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise BenchmarkError("%s is not JSON: %s" % (what, exc)) from None
    if not isinstance(data, dict) or "completed" not in data:
        raise BenchmarkError("%s has no 'completed' count: not a vllm bench serve result" % what)
    out = {
        "completed": int(data["completed"]),
        "failed": int(data.get("failed") or 0),
        "duration_s": float(data["duration"]),
        "request_throughput": float(data["request_throughput"]),
        "output_throughput": float(data["output_throughput"]),
        "total_token_throughput": float(data["total_token_throughput"]),
        "total_input_tokens": int(data.get("total_input_tokens") or 0),
        "total_output_tokens": int(data.get("total_output_tokens") or 0),
    }
    out.update(_metrics_skeleton())
    for lat in LATENCIES:
        key = lat[:-3]
        for p in PERCENTILES:
            field = "%s_%s_ms" % (p, key)
            if field not in data:
                raise BenchmarkError(
                    "%s has no %s: run vllm bench serve with --percentile-metrics ttft,tpot,itl,e2el "
                    "--metric-percentiles 50,90,99" % (what, field)
                )
            out[lat][p] = float(data[field])
    return out


def _value(text, what):
    """A number of an AISBench cell ('368.001 ms', '21.7 req/s', '8'); durations in milliseconds."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text), ""
    match = _UNIT.match(str(text))
    if not match:
        raise BenchmarkError("%s: %r is not a number with a unit" % (what, text))
    return float(match.group(1)), match.group(2)


def _number(text, what):
    return _value(text, what)[0]


def _ms(text, what):
    number, unit = _value(text, what)
    if unit not in _TO_MS:
        raise BenchmarkError("%s: %r is not a duration (ms, s, us)" % (what, text))
    return number * _TO_MS[unit]


def _total(common, name, what, convert=_number):
    """The total of AISBench's common metric ``name``, read with ``convert``."""
    if name not in common:
        raise BenchmarkError("%s: the common metrics have no %r" % (what, name))
    cell = common[name]
    cell = cell.get("total") if isinstance(cell, dict) else cell
    return convert(cell, "%s: %s" % (what, name))


def parse_ais_bench(csv_text, json_text, what="AISBench result"):
    """The metrics of an AISBench perf run: its per-request statistics (performances/<model>/<dataset>.csv:
    Average, Median, P90, P99 of E2EL, TTFT, TPOT, ITL) and common metrics (<dataset>.json)."""
    try:
        common = json.loads(json_text)
    except ValueError as exc:
        raise BenchmarkError("%s: the common metrics are not JSON: %s" % (what, exc)) from None
    if not isinstance(common, dict) or "Success Requests" not in common:
        raise BenchmarkError("%s: the common metrics have no 'Success Requests': not an AISBench perf result" % what)
    out = {
        "completed": int(_total(common, "Success Requests", what)),
        "failed": int(_total(common, "Failed Requests", what)),
        "duration_s": _total(common, "Benchmark Duration", what, _ms) / 1000.0,
        "request_throughput": _total(common, "Request Throughput", what),
        "output_throughput": _total(common, "Output Token Throughput", what),
        "total_token_throughput": _total(common, "Total Token Throughput", what),
        "total_input_tokens": int(_total(common, "Total Input Tokens", what)),
        "total_output_tokens": int(_total(common, "Total Generated Tokens", what)),
    }
    out.update(_metrics_skeleton())
    rows = {row.get("Performance Parameters"): row for row in csv.DictReader(io.StringIO(csv_text))}
    for lat, name in _AIS_ROWS:
        row = rows.get(name)
        if row is None:
            raise BenchmarkError("%s: the per-request statistics have no %s row" % (what, name))
        for p, col in _AIS_COLUMNS.items():
            if col not in row:
                raise BenchmarkError("%s: the per-request statistics have no %s column" % (what, col))
            out[lat][p] = _ms(row[col], "%s: %s %s" % (what, name, col))
    return out


def normalise(point, metrics, raw=()):
    """The normalised JSON of one point: what ran and what it measured."""
    keys = ("name", "scenario", "tool", "concurrency", "input_len", "output_len", "requests", "scaled")
    out = {key: point.get(key) for key in keys}
    out["requested"] = point.get("requested")
    for key in ("dataset_type", "repeat_rate", "prefix_len", "request_rate"):
        if key in point:
            out[key] = point[key]
    out.update(metrics)
    out["raw"] = list(raw)
    return out


def _point_files(folder):
    """The raw files of a point fetched into ``folder`` (relative paths, sorted)."""
    out = []
    for root, _dirs, files in os.walk(folder):
        for name in files:
            out.append(os.path.relpath(os.path.join(root, name), folder))
    return sorted(out)


def _vllm_bench_metrics(folder, what):
    path = os.path.join(folder, VLLM_RESULT)
    if not os.path.isfile(path):
        raise BenchmarkError(
            "%s: vllm bench serve wrote no %s (see its stdout.txt and stderr.txt)" % (what, VLLM_RESULT)
        )
    with open(path, encoding="utf-8") as handle:
        return parse_vllm_bench(handle.read(), what)


def _ais_bench_metrics(folder, files, what):
    csvs = [f for f in files if "/performances/" in "/" + f and f.endswith(".csv")]
    if not csvs:
        raise BenchmarkError("%s: AISBench wrote no performances/*/*.csv (see its stdout.txt and stderr.txt)" % what)
    csv_path = os.path.join(folder, csvs[0])
    json_path = csv_path[: -len(".csv")] + ".json"
    if not os.path.isfile(json_path):
        raise BenchmarkError("%s: AISBench wrote %s but no %s" % (what, csvs[0], os.path.basename(json_path)))
    with open(csv_path, encoding="utf-8") as c, open(json_path, encoding="utf-8") as j:
        return parse_ais_bench(c.read(), j.read(), what)


def parse_point(point, folder):
    """The normalised point from its raw outputs in ``folder`` (the run folder's raw/<point>)."""
    what = "point %s (%s)" % (point["name"], folder)
    files = _point_files(folder) if os.path.isdir(folder) else []
    if point["tool"] == "vllm_bench":
        metrics = _vllm_bench_metrics(folder, what)
    else:
        metrics = _ais_bench_metrics(folder, files, what)
    return normalise(point, metrics, files)


def load_points(run_dir):
    """The normalised points of a run folder (points/*.json), by name."""
    folder = os.path.join(str(run_dir), "points")
    if not os.path.isdir(folder):
        raise BenchmarkError(
            "the baseline %s is not a benchmark run folder (it has no points/): give benchmark_baseline the folder "
            "of an earlier run" % run_dir
        )
    out = {}
    for name in sorted(os.listdir(folder)):
        if name.endswith(".json"):
            with open(os.path.join(folder, name), encoding="utf-8") as handle:
                point = json.load(handle)
            out[point["name"]] = point
    return out
