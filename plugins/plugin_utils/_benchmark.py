# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The benchmark of playbooks/benchmark.yml, on the controller: scenarios, points, the exact argv
of each load generator, parsers of their raw outputs, the normalised point, the summary, the plots,
the comparison with a baseline run and the gates.

Load generators: AISBench (``ais_bench``, the specification's tool) for the specification's
scenarios and ``vllm bench serve`` for concurrency sweeps. Plain Python (no Ansible imports);
matplotlib only for the plots, imported when they are drawn.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from urllib.parse import urlsplit

import yaml

DATA_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "plugin_utils", "data")
SCENARIO_FILE = os.path.join(DATA_DIR, "benchmark_scenarios.yml")
TOOLS = ("ais_bench", "vllm_bench")
DATASET_TYPES = ("synthetic", "prefix_cache")
# Unset for every run (the specification: "Disable proxies before the test"), in every spelling.
PROXY_VARIABLES = ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY")
# The API key reaches the load generators in their environment, never in their argv:
# vllm bench serve reads OPENAI_API_KEY. AISBench reads its key from its configuration file only
# (a Python file it loads with mmengine's lazy imports, where os.environ cannot be called): the
# load-generator host gets a 0600 copy with the key, removed after the run; the run folder on the
# controller keeps the copy without it.
KEY_VARIABLE = "OPENAI_API_KEY"
# Fewest output tokens a scaled scenario keeps (or the scenario's own, when smaller).
MIN_OUTPUT = 16
PERCENTILES = ("mean", "p50", "p90", "p99")
LATENCIES = ("ttft_ms", "tpot_ms", "itl_ms", "e2el_ms")
# Every metric a gate or a comparison may name: (better when, unit, label).
METRICS = {
    "completed": ("higher", "", "completed requests"),
    "failed": ("lower", "", "failed requests"),
    "duration_s": ("lower", "s", "duration"),
    "request_throughput": ("higher", "req/s", "request throughput"),
    "output_throughput": ("higher", "tok/s", "output token throughput"),
    "total_token_throughput": ("higher", "tok/s", "total token throughput"),
}
for _lat in LATENCIES:
    for _p in PERCENTILES:
        METRICS["%s.%s" % (_lat, _p)] = ("lower", "ms", "%s %s" % (_p, _lat[:-3].upper()))
VLLM_RESULT = "result.json"
AIS_CONFIG = "ais_bench_config.py"
AIS_WORK = "work"
PNG_SIZE = (1000, 600)  # pixels of every plot (10 x 6 inches at 100 dpi)
PNG_DPI = 100


class BenchmarkError(ValueError):
    """A benchmark setting or a raw output that cannot be used; the message says what and how to fix it."""


# --------------------------------------------------------------------------------------------------
# Scenarios and points
# --------------------------------------------------------------------------------------------------
def load_scenarios(path=None):
    with open(path or SCENARIO_FILE, encoding="utf-8") as handle:
        return (yaml.safe_load(handle) or {})["scenarios"]


def _positive_int(what, value):
    if isinstance(value, bool) or not isinstance(value, (int, str, float)):
        raise BenchmarkError("%s must be a whole number above 0, not %r" % (what, value))
    try:
        number = int(str(value).strip())
    except ValueError:
        raise BenchmarkError("%s must be a whole number above 0, not %r" % (what, value)) from None
    if number <= 0:
        raise BenchmarkError("%s must be a whole number above 0, not %r" % (what, value))
    return number


def _number(what, value, low=None, high=None):
    if isinstance(value, bool):
        raise BenchmarkError("%s must be a number, not %r" % (what, value))
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise BenchmarkError("%s must be a number, not %r" % (what, value)) from None
    if math.isnan(number) or (low is not None and number < low) or (high is not None and number > high):
        raise BenchmarkError("%s must be between %s and %s, not %r" % (what, low, high, value))
    return number


def scale_lengths(input_len, output_len, max_model_len, margin=64, scale=True, what="scenario", expansion=0.3):
    """(input, output, scaled): the lengths that fit ``max_model_len`` less ``margin`` tokens.

    The input is counted ``1 + expansion`` times: a load generator's prompt of N tokens may reach the
    server as more (AISBench decodes random token ids to text, which the server tokenizes again,
    behind the chat template). Lengths that fit are kept. Otherwise, with ``scale``, both shrink by
    the same factor, the output keeping at least MIN_OUTPUT tokens (or its own length when smaller);
    without it they are refused."""
    input_len = _positive_int("%s: input_len" % what, input_len)
    output_len = _positive_int("%s: output_len" % what, output_len)
    max_model_len = _positive_int("the max model length", max_model_len)
    margin = int(margin)
    if margin < 0:
        raise BenchmarkError("the length margin must be 0 or more, not %r" % margin)
    grow = 1.0 + _number("the length expansion", expansion, 0, 10)
    budget = max_model_len - margin
    need = input_len * grow + output_len
    if need <= budget:
        return input_len, output_len, False
    if not scale:
        raise BenchmarkError(
            "%s: input_len %d (counted %g times) + output_len %d = %d tokens do not fit the max model length %d "
            "less a margin of %d (%d): lower the lengths, or let them be scaled (benchmark_scale_lengths: true)"
            % (what, input_len, grow, output_len, math.ceil(need), max_model_len, margin, budget)
        )
    least_out = min(output_len, MIN_OUTPUT)
    if budget < least_out + grow:
        raise BenchmarkError(
            "%s: the max model length %d less a margin of %d leaves %d tokens, too few for 1 input and %d output "
            "tokens: lower benchmark_length_margin" % (what, max_model_len, margin, budget, least_out)
        )
    factor = budget / need
    out = max(least_out, int(math.floor(output_len * factor)))
    return int(math.floor((budget - out) / grow)), out, True


def sweep_concurrencies(top=None, explicit=None):
    """The sweep's concurrencies: ``explicit`` as given (sorted, unique), else the powers of two below
    ``top`` and ``top`` itself (1, 2, 4, ..., top)."""
    if explicit:
        if not isinstance(explicit, (list, tuple)):
            raise BenchmarkError("the sweep's concurrencies must be a list of whole numbers, not %r" % (explicit,))
        return sorted({_positive_int("a sweep concurrency", c) for c in explicit})
    top = _positive_int("the sweep's top concurrency", top)
    out, c = [], 1
    while c < top:
        out.append(c)
        c *= 2
    return out + [top]


def _scenario(name, scenarios, overrides):
    if not isinstance(name, str) or name not in scenarios:
        raise BenchmarkError("no benchmark scenario %r: the scenarios are %s" % (name, ", ".join(sorted(scenarios))))
    spec = dict(scenarios[name])
    extra = (overrides or {}).get(name) or {}
    if not isinstance(extra, dict):
        raise BenchmarkError("the overrides of scenario %s must be a mapping, not %r" % (name, extra))
    unknown = sorted(set(extra) - set(spec) - {"concurrency", "prefix_len"})
    if unknown:
        raise BenchmarkError(
            "scenario %s has no setting %s: it has %s" % (name, ", ".join(unknown), ", ".join(sorted(spec)))
        )
    spec.update(extra)
    if spec.get("tool") not in TOOLS:
        raise BenchmarkError("scenario %s: tool must be one of %s, not %r" % (name, ", ".join(TOOLS), spec.get("tool")))
    return spec


def plan_points(
    selected, max_model_len, *, sweep=None, margin=64, scale=True, overrides=None, scenarios=None, expansion=0.3
):
    """One point per AISBench scenario and per concurrency of each vllm_bench scenario.

    ``sweep``: the concurrencies of the vllm_bench scenarios (see sweep_concurrencies)."""
    scenarios = load_scenarios() if scenarios is None else scenarios
    if not isinstance(selected, (list, tuple)) or not selected:
        raise BenchmarkError(
            "benchmark_scenarios must be a non-empty list of scenario names: %s" % ", ".join(sorted(scenarios))
        )
    for name in (overrides or {}).keys():
        if name not in scenarios:
            raise BenchmarkError(
                "benchmark_scenario_overrides: no benchmark scenario %r: the scenarios are %s"
                % (name, ", ".join(sorted(scenarios)))
            )
    points = []
    for name in selected:
        spec = _scenario(name, scenarios, overrides)
        in_len, out_len, scaled = scale_lengths(
            spec["input_len"], spec["output_len"], max_model_len, margin, scale, "scenario %s" % name, expansion
        )
        rate = _number("scenario %s: request_rate" % name, spec.get("request_rate", 0), 0)
        base = {
            "scenario": name,
            "tool": spec["tool"],
            "description": spec.get("description", ""),
            "input_len": in_len,
            "output_len": out_len,
            "scaled": scaled,
            "requested": {"input_len": int(spec["input_len"]), "output_len": int(spec["output_len"])},
            "request_rate": rate,
        }
        if spec["tool"] == "ais_bench":
            dataset = spec.get("dataset_type", "synthetic")
            if dataset not in DATASET_TYPES:
                raise BenchmarkError(
                    "scenario %s: dataset_type must be one of %s, not %r" % (name, ", ".join(DATASET_TYPES), dataset)
                )
            repeat = _number("scenario %s: repeat_rate" % name, spec.get("repeat_rate", 0), 0, 1)
            if dataset == "synthetic" and repeat:
                raise BenchmarkError(
                    "scenario %s: repeat_rate %s needs dataset_type prefix_cache (synthetic prompts share no prefix)"
                    % (name, spec.get("repeat_rate"))
                )
            conc = _positive_int("scenario %s: concurrency" % name, spec.get("concurrency"))
            point = dict(
                base,
                name="%s-c%d" % (name, conc),
                concurrency=conc,
                requests=_positive_int("scenario %s: data_num" % name, spec.get("data_num")),
                dataset_type=dataset,
                repeat_rate=repeat,
                prefix_len=int(math.floor(repeat * in_len)),
            )
            points.append(point)
        else:
            per = _positive_int("scenario %s: prompts_per_concurrency" % name, spec.get("prompts_per_concurrency", 4))
            least = _positive_int("scenario %s: min_prompts" % name, spec.get("min_prompts", 1))
            concs = [spec["concurrency"]] if spec.get("concurrency") is not None else sweep
            if not concs:
                raise BenchmarkError(
                    "scenario %s is a sweep: give it concurrencies (benchmark_sweep_concurrencies)" % name
                )
            for conc in sweep_concurrencies(explicit=concs if isinstance(concs, (list, tuple)) else [concs]):
                points.append(
                    dict(base, name="%s-c%d" % (name, conc), concurrency=conc, requests=max(least, per * conc))
                )
    names = [p["name"] for p in points]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise BenchmarkError("benchmark_scenarios lists a scenario twice: %s" % ", ".join(dup))
    return points


# --------------------------------------------------------------------------------------------------
# The target and the commands
# --------------------------------------------------------------------------------------------------
def target(plan=None, host="", endpoint="", model="", tokenizer="", max_model_len=0, concurrency=0):
    """What the benchmark runs against and from where: explicit settings first, else the plan's
    front door (its host generates the load), served model name, model path and max model length;
    the sweep's top concurrency is k3_concurrency (the P/D profiles), else max_num_seqs, else 8."""
    plan = plan if isinstance(plan, dict) else {}
    params = plan.get("parameters") or {}
    front = plan.get("endpoint") or {}
    out = {
        "host": host or front.get("host") or "",
        "url": (endpoint or front.get("url") or "").rstrip("/"),
        "model": model or (plan.get("verify") or {}).get("served_model_name") or params.get("served_model_name") or "",
        "tokenizer": tokenizer or params.get("model_path") or "",
        "max_model_len": max_model_len or params.get("max_model_len") or 0,
        "concurrency": concurrency or params.get("concurrency") or params.get("max_num_seqs") or 8,
    }
    missing = [
        var
        for key, var in (
            ("host", "benchmark_host"),
            ("url", "benchmark_endpoint"),
            ("model", "benchmark_served_model_name"),
            ("tokenizer", "benchmark_tokenizer"),
            ("max_model_len", "benchmark_max_model_len"),
        )
        if not out[key]
    ]
    if missing:
        raise BenchmarkError(
            "the benchmark has no %s: %s. Fix: run it on an inventory the planner accepts (the plan's front door), "
            "or set %s" % (", ".join(missing), "no plan" if not plan else "the plan does not say", ", ".join(missing))
        )
    parts = urlsplit(out["url"])
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BenchmarkError("benchmark_endpoint must be an http(s) URL such as http://host:8000, not %r" % out["url"])
    out["max_model_len"] = _positive_int("benchmark_max_model_len", out["max_model_len"])
    out["concurrency"] = _positive_int("the sweep's top concurrency (k3_concurrency)", out["concurrency"])
    return out


def _unset_proxies():
    argv = ["/usr/bin/env"]
    for name in PROXY_VARIABLES:
        argv += ["-u", name]
    return argv


def vllm_bench_argv(point, tgt, venv, folder):
    rate = "inf" if not point["request_rate"] else "%g" % point["request_rate"]
    return _unset_proxies() + [
        os.path.join(venv, "bin", "vllm"),
        "bench",
        "serve",
        "--backend",
        "openai-chat",
        "--endpoint",
        "/v1/chat/completions",
        "--base-url",
        tgt["url"],
        "--model",
        tgt["model"],
        "--tokenizer",
        tgt["tokenizer"],
        "--dataset-name",
        "random",
        "--random-input-len",
        str(point["input_len"]),
        "--random-output-len",
        str(point["output_len"]),
        "--num-prompts",
        str(point["requests"]),
        "--max-concurrency",
        str(point["concurrency"]),
        "--request-rate",
        rate,
        "--ignore-eos",
        "--percentile-metrics",
        "ttft,tpot,itl,e2el",
        "--metric-percentiles",
        "50,90,99",
        "--seed",
        "0",
        "--disable-tqdm",
        "--save-result",
        "--result-dir",
        folder,
        "--result-filename",
        VLLM_RESULT,
    ]


_AIS_CONFIG = """# AISBench configuration of benchmark point {name} (kimi_k3.serving, playbooks/benchmark.yml).
# {description}
# {key_note}
from ais_bench.benchmark.calculators import DefaultPerfMetricCalculator
from ais_bench.benchmark.datasets import MATHEvaluator, SyntheticDataset, math_postprocess_v2
from ais_bench.benchmark.models import VLLMCustomAPIChat
from ais_bench.benchmark.openicl.icl_inferencer import GenInferencer
from ais_bench.benchmark.openicl.icl_prompt_template import PromptTemplate
from ais_bench.benchmark.openicl.icl_retriever import ZeroRetriever
from ais_bench.benchmark.summarizers import DefaultPerfSummarizer

models = [
    dict(
        attr="service",
        type=VLLMCustomAPIChat,
        abbr="kimi-k3",
        path={tokenizer!r},
        model={model!r},
        stream=True,
        request_rate={request_rate!r},
        use_timestamp=False,
        retry=2,
        api_key={api_key!r},
        host_ip={host!r},
        host_port={port!r},
        url={url!r},
        max_out_len={output_len!r},
        batch_size={concurrency!r},
        trust_remote_code=False,
        generation_kwargs=dict(temperature=0.01, ignore_eos=True),
    )
]
datasets = [
    dict(
        abbr={dataset!r},
        type=SyntheticDataset,
        config={{
            "Type": "tokenid",
            "RequestCount": {requests!r},
            "TrustRemoteCode": False,
            "TokenIdConfig": {{"RequestSize": {input_len!r}, "PrefixLen": {prefix_len!r}}},
        }},
        reader_cfg=dict(input_columns=["question"], output_column="answer"),
        infer_cfg=dict(
            prompt_template=dict(type=PromptTemplate, template="{{question}}"),
            retriever=dict(type=ZeroRetriever),
            inferencer=dict(type=GenInferencer),
        ),
        eval_cfg=dict(
            evaluator=dict(type=MATHEvaluator, version="v2"),
            pred_postprocessor=dict(type=math_postprocess_v2),
        ),
    )
]
summarizer = dict(
    attr="performance",
    type=DefaultPerfSummarizer,
    calculator=dict(
        type=DefaultPerfMetricCalculator,
        stats_list=["Average", "Min", "Max", "Median", "P75", "P90", "P99"],
    ),
)
"""


def ais_bench_config(point, tgt, api_key=""):
    """The AISBench configuration file of an ais_bench point (a Python file AISBench reads); the copy
    with ``api_key`` is for the load-generator host only (0600, removed after the run)."""
    parts = urlsplit(tgt["url"])
    port = parts.port or (443 if parts.scheme == "https" else 80)
    rate = point["request_rate"]
    return _AIS_CONFIG.format(
        name=point["name"],
        description=point.get("description", ""),
        key_note=(
            "The API key of the deployment: a 0600 file, removed after the run."
            if api_key
            else "No API key in this copy (the load-generator host's copy has the deployment's key, if any)."
        ),
        api_key=str(api_key or ""),
        tokenizer=tgt["tokenizer"],
        model=tgt["model"],
        request_rate=int(rate) if float(rate).is_integer() else rate,
        host=parts.hostname,
        port=port,
        url=tgt["url"],
        output_len=point["output_len"],
        concurrency=point["concurrency"],
        dataset=point["dataset_type"],
        requests=point["requests"],
        input_len=point["input_len"],
        prefix_len=point["prefix_len"],
    )


def ais_bench_argv(venv, folder):
    return _unset_proxies() + [
        os.path.join(venv, "bin", "ais_bench"),
        os.path.join(folder, AIS_CONFIG),
        "--mode",
        "perf",
        "--work-dir",
        os.path.join(folder, AIS_WORK),
    ]


def commands(points, tgt, vllm_venv, ais_bench_venv, remote_dir):
    """Each point with what its load-generator host runs: ``dir`` (the point's folder there),
    ``argv`` and ``config`` (the AISBench file to write first, without the API key; None for
    vllm bench serve). After the run the host's copy of the config and AISBench's dump of it
    (``dir``/work/*/configs, which holds the key) are removed; every other file is fetched."""
    if not remote_dir or not str(remote_dir).startswith("/"):
        raise BenchmarkError("benchmark_remote_dir must be an absolute path, not %r" % (remote_dir,))
    out = []
    for point in points:
        folder = os.path.join(str(remote_dir), point["name"])
        if point["tool"] == "vllm_bench":
            extra = {"argv": vllm_bench_argv(point, tgt, vllm_venv, folder), "config": None}
        else:
            extra = {"argv": ais_bench_argv(ais_bench_venv, folder), "config": ais_bench_config(point, tgt)}
        out.append(dict(point, dir=folder, **extra))
    return out


# --------------------------------------------------------------------------------------------------
# Parsers: raw outputs -> the normalised point
# --------------------------------------------------------------------------------------------------
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


_UNIT = re.compile(r"^\s*(-?[0-9.eE+-]+)\s*([a-zA-Z/]*)\s*$")
_TO_MS = {"": 1.0, "ms": 1.0, "s": 1000.0, "us": 0.001, "μs": 0.001}


def _value(text, what):
    """A number of an AISBench cell ('368.001 ms', '21.7 req/s', '8'); durations in milliseconds."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text), ""
    match = _UNIT.match(str(text))
    if not match:
        raise BenchmarkError("%s: %r is not a number with a unit" % (what, text))
    return float(match.group(1)), match.group(2)


def _ms(text, what):
    number, unit = _value(text, what)
    if unit not in _TO_MS:
        raise BenchmarkError("%s: %r is not a duration (ms, s, us)" % (what, text))
    return number * _TO_MS[unit]


def parse_ais_bench(csv_text, json_text, what="AISBench result"):
    """The metrics of an AISBench perf run: its per-request statistics (performances/<model>/<dataset>.csv:
    Average, Median, P90, P99 of E2EL, TTFT, TPOT, ITL) and common metrics (<dataset>.json)."""
    try:
        common = json.loads(json_text)
    except ValueError as exc:
        raise BenchmarkError("%s: the common metrics are not JSON: %s" % (what, exc)) from None
    if not isinstance(common, dict) or "Success Requests" not in common:
        raise BenchmarkError("%s: the common metrics have no 'Success Requests': not an AISBench perf result" % what)

    def total(name, convert=None):
        if name not in common:
            raise BenchmarkError("%s: the common metrics have no %r" % (what, name))
        cell = common[name]
        cell = cell.get("total") if isinstance(cell, dict) else cell
        return convert(cell, "%s: %s" % (what, name)) if convert else _value(cell, "%s: %s" % (what, name))[0]

    out = {
        "completed": int(total("Success Requests")),
        "failed": int(total("Failed Requests")),
        "duration_s": total("Benchmark Duration", _ms) / 1000.0,
        "request_throughput": total("Request Throughput"),
        "output_throughput": total("Output Token Throughput"),
        "total_token_throughput": total("Total Token Throughput"),
        "total_input_tokens": int(total("Total Input Tokens")),
        "total_output_tokens": int(total("Total Generated Tokens")),
    }
    out.update(_metrics_skeleton())
    rows = {row.get("Performance Parameters"): row for row in csv.DictReader(io.StringIO(csv_text))}
    columns = {"mean": "Average", "p50": "Median", "p90": "P90", "p99": "P99"}
    for lat, name in (("ttft_ms", "TTFT"), ("tpot_ms", "TPOT"), ("itl_ms", "ITL"), ("e2el_ms", "E2EL")):
        row = rows.get(name)
        if row is None:
            raise BenchmarkError("%s: the per-request statistics have no %s row" % (what, name))
        for p, col in columns.items():
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


def metric(point, name):
    if name not in METRICS:
        raise BenchmarkError("no benchmark metric %r: the metrics are %s" % (name, ", ".join(METRICS)))
    if "." in name:
        lat, p = name.split(".")
        return (point.get(lat) or {}).get(p)
    return point.get(name)


def _point_files(folder, point):
    """The raw files of a point fetched into ``folder`` (relative paths, sorted)."""
    out = []
    for root, _dirs, files in os.walk(folder):
        for name in files:
            out.append(os.path.relpath(os.path.join(root, name), folder))
    return sorted(out)


def parse_point(point, folder):
    """The normalised point from its raw outputs in ``folder`` (the run folder's raw/<point>)."""
    what = "point %s (%s)" % (point["name"], folder)
    files = _point_files(folder, point) if os.path.isdir(folder) else []
    if point["tool"] == "vllm_bench":
        path = os.path.join(folder, VLLM_RESULT)
        if not os.path.isfile(path):
            raise BenchmarkError(
                "%s: vllm bench serve wrote no %s (see its stdout.txt and stderr.txt)" % (what, VLLM_RESULT)
            )
        with open(path, encoding="utf-8") as handle:
            metrics = parse_vllm_bench(handle.read(), what)
    else:
        csvs = [f for f in files if "/performances/" in "/" + f and f.endswith(".csv")]
        if not csvs:
            raise BenchmarkError(
                "%s: AISBench wrote no performances/*/*.csv (see its stdout.txt and stderr.txt)" % what
            )
        csv_path = os.path.join(folder, csvs[0])
        json_path = csv_path[: -len(".csv")] + ".json"
        if not os.path.isfile(json_path):
            raise BenchmarkError("%s: AISBench wrote %s but no %s" % (what, csvs[0], os.path.basename(json_path)))
        with open(csv_path, encoding="utf-8") as c, open(json_path, encoding="utf-8") as j:
            metrics = parse_ais_bench(c.read(), j.read(), what)
    return normalise(point, metrics, files)


# --------------------------------------------------------------------------------------------------
# Baseline, gates
# --------------------------------------------------------------------------------------------------
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


def change_percent(metric_name, value, base):
    """How much worse ``value`` is than ``base`` in percent (negative: better); None without a base."""
    if value is None or base is None or not base:
        return None
    better = METRICS[metric_name][0]
    delta = (base - value) if better == "higher" else (value - base)
    return 100.0 * delta / abs(base)


def compare(points, baseline, metrics):
    """Rows (point, metric, value, baseline, regression %) for every point the baseline has too."""
    rows = []
    for point in points:
        base = baseline.get(point["name"])
        if base is None:
            continue
        for name in metrics:
            value, old = metric(point, name), metric(base, name)
            rows.append(
                {
                    "point": point["name"],
                    "metric": name,
                    "value": value,
                    "baseline": old,
                    "regression_percent": change_percent(name, value, old),
                }
            )
    return rows


def gate_list(
    max_failed=0,
    max_ttft_p99_ms=None,
    min_output_throughput=None,
    max_regression_percent=None,
    regression_metrics=(),
    extra=(),
):
    """The gates from the role's threshold variables, then ``extra`` (benchmark_gates)."""
    gates = []
    if max_failed is not None:
        gates.append({"metric": "failed", "max": max_failed, "source": "benchmark_max_failed"})
    if max_ttft_p99_ms is not None:
        gates.append({"metric": "ttft_ms.p99", "max": max_ttft_p99_ms, "source": "benchmark_max_ttft_p99_ms"})
    if min_output_throughput is not None:
        gates.append(
            {"metric": "output_throughput", "min": min_output_throughput, "source": "benchmark_min_output_throughput"}
        )
    if max_regression_percent is not None:
        for name in regression_metrics or ():
            gates.append(
                {
                    "metric": name,
                    "max_regression_percent": max_regression_percent,
                    "source": "benchmark_max_regression_percent",
                }
            )
    if not isinstance(extra, (list, tuple)):
        raise BenchmarkError("benchmark_gates must be a list of gates, not %r" % (extra,))
    for index, gate in enumerate(extra):
        if isinstance(gate, dict):
            gate = dict(gate, source=gate.get("source") or "benchmark_gates[%d]" % index)
        gates.append(gate)
    return [_check_gate(g) for g in gates]


_GATE_KEYS = {"metric", "max", "min", "max_regression_percent", "scenario", "source"}


def _check_gate(gate):
    if not isinstance(gate, dict):
        raise BenchmarkError(
            "a benchmark gate must be a mapping such as {metric: ttft_ms.p99, max: 2000}, not %r" % (gate,)
        )
    where = gate.get("source", "a gate")
    unknown = sorted(set(gate) - _GATE_KEYS)
    if unknown:
        raise BenchmarkError(
            "%s: a gate has no key %s: its keys are %s" % (where, ", ".join(unknown), ", ".join(sorted(_GATE_KEYS)))
        )
    name = gate.get("metric")
    if name not in METRICS:
        raise BenchmarkError("%s: no benchmark metric %r: the metrics are %s" % (where, name, ", ".join(METRICS)))
    limits = [k for k in ("max", "min", "max_regression_percent") if gate.get(k) is not None]
    if len(limits) != 1:
        raise BenchmarkError("%s: a gate on %s needs exactly one of max, min or max_regression_percent" % (where, name))
    out = dict(gate)
    out[limits[0]] = _number("%s: %s" % (where, limits[0]), gate[limits[0]])
    return out


def _fmt(value, unit=""):
    """A measured value: counts as whole numbers, the rest with two decimals."""
    if value is None:
        return "-"
    text = "%d" % value if isinstance(value, int) or (not unit and float(value).is_integer()) else "%.2f" % value
    return text + (" " + unit if unit else "")


def _limit(value, unit=""):
    """A threshold as the user wrote it (2000, 0.5, 1000000000)."""
    text = ("%f" % value).rstrip("0").rstrip(".")
    return text + (" " + unit if unit else "")


def apply_gates(points, gates, run_dir, baseline=None, baseline_dir=""):
    """The failures, one sentence each naming the point, the metric, its value, the threshold, the
    variable that set it and the run folder; [] when every gate passes."""
    failures = []
    for gate in gates:
        name = gate["metric"]
        unit = METRICS[name][1]
        for point in points:
            if gate.get("scenario") and point["scenario"] != gate["scenario"]:
                continue
            value = metric(point, name)
            head = "benchmark gate failed: point %s: %s = %s" % (point["name"], name, _fmt(value, unit))
            tail = " (%s); run folder %s" % (gate["source"], run_dir)
            if "max" in gate and value is not None and value > gate["max"]:
                failures.append("%s, above the threshold %s%s" % (head, _limit(gate["max"], unit), tail))
            elif "min" in gate and value is not None and value < gate["min"]:
                failures.append("%s, below the threshold %s%s" % (head, _limit(gate["min"], unit), tail))
            elif "max_regression_percent" in gate and baseline is not None:
                base = baseline.get(point["name"])
                if base is None:
                    continue
                worse = change_percent(name, value, metric(base, name))
                if worse is not None and worse > gate["max_regression_percent"]:
                    failures.append(
                        "%s, %.1f%% worse than the baseline's %s, above the threshold of %s%% regression%s; baseline %s"
                        % (
                            head,
                            worse,
                            _fmt(metric(base, name), unit),
                            _limit(gate["max_regression_percent"]),
                            tail,
                            baseline_dir,
                        )
                    )
    return failures


# --------------------------------------------------------------------------------------------------
# Summary and plots
# --------------------------------------------------------------------------------------------------
def summary_markdown(points, run_dir, target_info=None, comparison=(), failures=(), problems=(), baseline_dir=""):
    lines = ["# Benchmark %s" % os.path.basename(os.path.normpath(str(run_dir))), ""]
    if target_info:
        lines += [
            "Endpoint %s, model %s, load generated from %s."
            % (target_info["url"], target_info["model"], target_info["host"]),
            "",
        ]
    head = (
        "| point | tool | concurrency | input/output tokens | completed | failed | req/s | output tok/s "
        "| TTFT p50 / p99 ms | TPOT p50 / p99 ms | ITL p99 ms | E2E p50 / p99 ms |"
    )
    lines += [head, "|" + "---|" * 12]
    for p in points:
        lengths = "%d/%d" % (p["input_len"], p["output_len"])
        if p.get("scaled"):
            lengths += " (scaled from %d/%d)" % (p["requested"]["input_len"], p["requested"]["output_len"])
        lines.append(
            "| %s | %s | %d | %s | %d | %d | %s | %s | %s / %s | %s / %s | %s | %s / %s |"
            % (
                p["name"],
                p["tool"],
                p["concurrency"],
                lengths,
                p["completed"],
                p["failed"],
                _fmt(p["request_throughput"]),
                _fmt(p["output_throughput"]),
                _fmt(p["ttft_ms"]["p50"]),
                _fmt(p["ttft_ms"]["p99"]),
                _fmt(p["tpot_ms"]["p50"]),
                _fmt(p["tpot_ms"]["p99"]),
                _fmt(p["itl_ms"]["p99"]),
                _fmt(p["e2el_ms"]["p50"]),
                _fmt(p["e2el_ms"]["p99"]),
            )
        )
    if comparison:
        lines += ["", "## Against the baseline %s" % baseline_dir, ""]
        lines += ["| point | metric | value | baseline | worse by |", "|---|---|---|---|---|"]
        for row in comparison:
            unit = METRICS[row["metric"]][1]
            change = "-" if row["regression_percent"] is None else "%+.1f%%" % row["regression_percent"]
            lines.append(
                "| %s | %s | %s | %s | %s |"
                % (row["point"], row["metric"], _fmt(row["value"], unit), _fmt(row["baseline"], unit), change)
            )
    lines += ["", "## Gates", ""]
    if problems or failures:
        lines += ["- " + text for text in list(problems) + list(failures)]
    else:
        lines.append("Every gate passed.")
    return "\n".join(lines) + "\n"


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise BenchmarkError(
            "the plots need matplotlib on the controller: pip install matplotlib (requirements.txt pins it)"
        ) from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _series(points, scenarios=None):
    """{scenario: points sorted by concurrency}, only of ``scenarios`` when given."""
    out = {}
    for p in points:
        if scenarios is None or p["scenario"] in scenarios:
            out.setdefault(p["scenario"], []).append(p)
    return {k: sorted(v, key=lambda p: p["concurrency"]) for k, v in out.items()}


def _colours(points):
    """One colour per scenario, the same in every panel."""
    names = sorted({p["scenario"] for p in points})
    return {name: "C%d" % (i % 10) for i, name in enumerate(names)}


def _concurrency_axis(ax, points):
    """Concurrency on a log2 axis (a sweep doubles it), ticked at the concurrencies that ran."""
    ticks = sorted({p["concurrency"] for p in points})
    ax.set_xscale("log", base=2)
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.minorticks_off()
    ax.set_xlabel("concurrency")


def _figure(plt, rows=1, cols=1):
    size = (PNG_SIZE[0] / PNG_DPI, PNG_SIZE[1] / PNG_DPI)
    fig, axes = plt.subplots(rows, cols, figsize=size, dpi=PNG_DPI, squeeze=False)
    return fig, [ax for row in axes for ax in row]


def _save(plt, fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=PNG_DPI, format="png")
    plt.close(fig)
    return path


def plot_throughput(points, path, title=""):
    plt = _pyplot()
    fig, (left, right) = _figure(plt, 1, 2)
    colours = _colours(points)
    for scenario, series in _series(points).items():
        x = [p["concurrency"] for p in series]
        colour = colours[scenario]
        left.plot(x, [p["output_throughput"] for p in series], marker="o", color=colour, label=scenario)
        right.plot(x, [p["request_throughput"] for p in series], marker="o", color=colour, label=scenario)
    for ax, label in ((left, "output tokens/s"), (right, "requests/s")):
        _concurrency_axis(ax, points)
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
    fig.suptitle(title or "Throughput against concurrency")
    return _save(plt, fig, path)


def plot_latency(points, path, title=""):
    plt = _pyplot()
    fig, axes = _figure(plt, 2, 2)
    colours = _colours(points)
    for ax, lat in zip(axes, LATENCIES, strict=True):
        for scenario, series in _series(points).items():
            x = [p["concurrency"] for p in series]
            for p_name, style, marker in (("p50", "-", "o"), ("p90", "--", "s"), ("p99", ":", "^")):
                ax.plot(
                    x,
                    [p[lat][p_name] for p in series],
                    style,
                    marker=marker,
                    color=colours[scenario],
                    label="%s %s" % (scenario, p_name),
                )
        ax.set_title(lat[:-3].upper())
        _concurrency_axis(ax, points)
        ax.set_ylabel("ms")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="x-small")
    fig.suptitle(title or "Latency percentiles against concurrency")
    return _save(plt, fig, path)


def plot_baseline(points, baseline, path, title=""):
    plt = _pyplot()
    fig, axes = _figure(plt, 1, 3)
    # The baseline's points of the scenarios this run has, in the same colour, dashed.
    scenarios = {p["scenario"] for p in points}
    base_points = [p for p in baseline.values() if p.get("scenario") in scenarios]
    colours = _colours(points)
    for ax, name in zip(axes, ("output_throughput", "ttft_ms.p99", "tpot_ms.p99"), strict=True):
        for label, group, style, marker in (("run", points, "-", "o"), ("baseline", base_points, "--", "x")):
            for scenario, series in _series(group, scenarios).items():
                ax.plot(
                    [p["concurrency"] for p in series],
                    [metric(p, name) for p in series],
                    style,
                    marker=marker,
                    color=colours[scenario],
                    label="%s %s" % (scenario, label),
                )
        ax.set_title("%s (%s)" % (name, METRICS[name][1]))
        _concurrency_axis(ax, points + base_points)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="x-small")
    fig.suptitle(title or "This run against the baseline")
    return _save(plt, fig, path)


# --------------------------------------------------------------------------------------------------
# The report of a run folder
# --------------------------------------------------------------------------------------------------
def report(run_dir, points, results=(), gates=(), baseline_dir="", target_info=None, regression_metrics=None):
    """Normalise every point of ``run_dir`` (raw/<point>/), then write points/<point>.json, summary.md,
    summary.json and the plots; the failures of the gates and the points that did not run are returned
    (nothing fails here). ``results``: per point name the load generator's exit status ({name, rc})."""
    run_dir = os.path.abspath(str(run_dir))
    rcs = {r["name"]: r.get("rc") for r in results or () if isinstance(r, dict) and "name" in r}
    gates = [_check_gate(g) for g in gates]
    baseline = load_points(baseline_dir) if baseline_dir else None
    problems, done = [], []
    for point in points:
        folder = os.path.join(run_dir, "raw", point["name"])
        if rcs.get(point["name"]) not in (None, 0):
            problems.append(
                "benchmark point failed: %s: %s exited %s (its output: %s/stdout.txt, stderr.txt); run folder %s"
                % (point["name"], point["tool"], rcs[point["name"]], folder, run_dir)
            )
            continue
        try:
            done.append(parse_point(point, folder))
        except BenchmarkError as exc:
            problems.append("benchmark point failed: %s; run folder %s" % (exc, run_dir))
    os.makedirs(os.path.join(run_dir, "points"), exist_ok=True)
    for point in done:
        with open(os.path.join(run_dir, "points", point["name"] + ".json"), "w", encoding="utf-8") as handle:
            json.dump(point, handle, indent=2, sort_keys=True)
            handle.write("\n")
    metrics = (
        regression_metrics
        or [g["metric"] for g in gates if "max_regression_percent" in g]
        or [
            "output_throughput",
            "ttft_ms.p99",
            "tpot_ms.p99",
        ]
    )
    comparison = compare(done, baseline, metrics) if baseline is not None else []
    failures = apply_gates(done, gates, run_dir, baseline, baseline_dir)
    plots = []
    if done:
        plots.append(plot_throughput(done, os.path.join(run_dir, "throughput.png")))
        plots.append(plot_latency(done, os.path.join(run_dir, "latency.png")))
        if baseline:
            plots.append(plot_baseline(done, baseline, os.path.join(run_dir, "baseline.png")))
    summary = summary_markdown(done, run_dir, target_info, comparison, failures, problems, baseline_dir)
    with open(os.path.join(run_dir, "summary.md"), "w", encoding="utf-8") as handle:
        handle.write(summary)
    document = {
        "run_dir": run_dir,
        "target": target_info,
        "points": done,
        "baseline": baseline_dir or None,
        "comparison": comparison,
        "gates": gates,
        "failures": failures,
        "problems": problems,
    }
    with open(os.path.join(run_dir, "summary.json"), "w", encoding="utf-8") as handle:
        json.dump(document, handle, indent=2, sort_keys=True)
        handle.write("\n")
    return dict(document, summary=summary, plots=plots)
