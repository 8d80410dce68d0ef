"""The benchmark machinery of playbooks/benchmark.yml (plugins/plugin_utils/benchmark/): scaling,
sweep, the exact argv of each load generator, the parsers against outputs the real tools recorded
(tests/unit/fixtures/bench/README.md), the summary, the plots, the baseline comparison, the gates,
and every bad setting refused with a message that names it."""

from __future__ import annotations

import ast
import json
import math
import re
import shutil
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError
from conftest import ROOT, example_plan
from helpers.pngread import read_png

from ansible_collections.kimi_k3.serving.plugins.action.benchmark_report import _exit_codes
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.benchmark._commands import (
    VllmBenchOptions,
    ais_bench_config,
    commands,
    vllm_bench_argv,
)
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.benchmark._common import BenchmarkError
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.benchmark._gates import (
    Thresholds,
    apply_gates,
    gate_list,
)
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.benchmark._plots import PNG_SIZE
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.benchmark._points import (
    LengthFit,
    load_scenarios,
    plan_points,
    scale_lengths,
    sweep_concurrencies,
)
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.benchmark._report import ReportSettings, report
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.benchmark._results import (
    _ms,
    load_points,
    parse_ais_bench,
    parse_point,
    parse_vllm_bench,
)
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.benchmark._summary import summary_markdown
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.benchmark._target import TargetSettings, target
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._benchmark import Filters

FIXTURES = ROOT / "tests" / "unit" / "fixtures" / "bench"
RAW = FIXTURES / "raw"
# The settings the fixtures were recorded with (tests/unit/fixtures/bench/README.md).
RECORDED = {
    "sweep": {"input_len": 64, "output_len": 16, "prompts_per_concurrency": 2},
    "spec-8k-1k": {"input_len": 64, "output_len": 16, "data_num": 8},
    "spec-128k-1k-prefix": {"input_len": 128, "output_len": 16, "data_num": 8},
}
RECORDED_TARGET = {
    "host": "localhost",
    "url": "http://127.0.0.1:18101",
    "model": "kimi-k3-sandbox",
    "tokenizer": "/work/main/.cache/sandbox/models/tiny-llama",
    "max_model_len": 512,
    "concurrency": 4,
}
PROXIES = ["-u", "http_proxy", "-u", "https_proxy", "-u", "HTTP_PROXY", "-u", "HTTPS_PROXY"]
PROXIES += ["-u", "all_proxy", "-u", "ALL_PROXY"]


def recorded_point(name):
    """The point of a fixture folder, planned with the settings it was recorded with."""
    scenario, _unused, conc = name.rpartition("-c")
    overrides = dict(RECORDED, **{scenario: dict(RECORDED[scenario], concurrency=int(conc))})
    (point,) = plan_points([scenario], 512, overrides=overrides)
    return point


RECORDED_NAMES = sorted(p.name for p in RAW.iterdir())
SWEEP_NAMES = [n for n in RECORDED_NAMES if n.startswith("sweep-")]
AIS_NAMES = [n for n in RECORDED_NAMES if not n.startswith("sweep-")]


def test_every_tool_and_concurrency_was_recorded():
    assert SWEEP_NAMES == ["sweep-c1", "sweep-c2", "sweep-c4"]
    assert AIS_NAMES == ["spec-128k-1k-prefix-c4", "spec-8k-1k-c1", "spec-8k-1k-c2", "spec-8k-1k-c4"]


# --------------------------------------------------------------------------------------------------
# Scenarios, scaling, sweep
# --------------------------------------------------------------------------------------------------
def test_the_spec_scenarios_are_the_specification_s():
    scenarios = load_scenarios()
    short, long_ = scenarios["spec-8k-1k"], scenarios["spec-128k-1k-prefix"]
    assert (short["input_len"], short["output_len"], short["data_num"], short["concurrency"]) == (8192, 1024, 16, 4)
    assert (short["request_rate"], short["repeat_rate"], short["tool"]) == (0, 0, "ais_bench")
    assert (long_["input_len"], long_["output_len"], long_["data_num"], long_["concurrency"]) == (131024, 1024, 16, 4)
    assert (long_["dataset_type"], long_["repeat_rate"], long_["request_rate"]) == ("prefix_cache", 0.99, 0)
    assert scenarios["sweep"]["tool"] == "vllm_bench"


def _scale_lengths(input_len, output_len, max_model_len, margin=64, scale=True, what="scenario", expansion=0.3):
    """scale_lengths of a row below, whose settings come in this order."""
    fit = LengthFit(margin=margin, scale=scale, expansion=expansion)
    return scale_lengths(input_len, output_len, max_model_len, fit=fit, what=what)


@pytest.mark.parametrize(
    "args,expected",
    [
        # Fits: kept as they are (the spec's performance deployment has --max-model-len 250000).
        ((8192, 1024, 250000, 64), (8192, 1024, False)),
        ((131024, 1024, 250000, 64), (131024, 1024, False)),
        ((100, 20, 512, 64), (100, 20, False)),
        # The sandbox (512): 448 tokens, the input counted 1.3 times: 8192:1024 scaled by
        # 448 / (8192 * 1.3 + 1024) -> output floor(39.3) = 39, input floor((448 - 39) / 1.3) = 314.
        ((8192, 1024, 512, 64), (314, 39, True)),
        # 131024:1024 scaled gives 2 output tokens: the output keeps 16; input floor(432 / 1.3).
        ((131024, 1024, 512, 64), (332, 16, True)),
        # An output shorter than 16 keeps its own length.
        ((1000, 8, 512, 0), (387, 8, True)),
        # Counted as they are (expansion 0): just over, the output is rounded down (floor(20 * 448/449)),
        # the input takes the rest.
        ((429, 20, 512, 64, True, "x", 0), (429, 19, True)),
        ((428, 20, 512, 64, True, "x", 0), (428, 20, False)),
        ((329, 20, 512, 64), (329, 20, False)),
    ],
)
def test_scale_lengths(args, expected):
    out = _scale_lengths(*args)
    assert out == expected
    grow = 1 + (args[6] if len(args) > 6 else 0.3)
    assert out[0] * grow + out[1] <= args[2] - args[3]


@pytest.mark.parametrize(
    "args,kwargs,needle",
    [
        ((8192, 1024, 512, 64), {"scale": False}, "do not fit the max model length 512 less a margin of 64"),
        ((8192, 1024, 512, 64), {"expansion": -1}, "the length expansion must be between 0 and 10"),
        ((0, 1024, 512, 64), {}, "input_len must be a whole number above 0, not 0"),
        ((100, -1, 512, 64), {}, "output_len must be a whole number above 0, not -1"),
        (("many", 10, 512, 64), {}, "input_len must be a whole number above 0, not 'many'"),
        ((100, 10, 0, 64), {}, "the max model length must be a whole number above 0"),
        ((100, 10, 512, -1), {}, "the length margin must be 0 or more"),
        ((8192, 1024, 70, 64), {}, "leaves 6 tokens, too few"),
    ],
)
def test_scale_lengths_refused(args, kwargs, needle):
    with pytest.raises(BenchmarkError) as err:
        _scale_lengths(*args, **kwargs)
    assert needle in str(err.value)


@pytest.mark.parametrize(
    "top,explicit,expected",
    [
        (48, None, [1, 2, 4, 8, 16, 32, 48]),
        (8, None, [1, 2, 4, 8]),
        (1, None, [1]),
        (24, None, [1, 2, 4, 8, 16, 24]),
        ("6", None, [1, 2, 4, 6]),
        (48, [4, 1, 4, "2"], [1, 2, 4]),
    ],
)
def test_sweep_concurrencies(top, explicit, expected):
    assert sweep_concurrencies(top, explicit) == expected


@pytest.mark.parametrize(
    "top,explicit,needle",
    [
        (0, None, "the sweep's top concurrency must be a whole number above 0, not 0"),
        (-4, None, "not -4"),
        (True, None, "not True"),
        (8, [2, 0], "a sweep concurrency must be a whole number above 0, not 0"),
        (8, "4", "must be a list of whole numbers"),
    ],
)
def test_sweep_refused(top, explicit, needle):
    with pytest.raises(BenchmarkError) as err:
        sweep_concurrencies(top, explicit)
    assert needle in str(err.value)


def test_points_of_the_spec_and_a_sweep_on_the_sandbox():
    points = plan_points(["spec-8k-1k", "spec-128k-1k-prefix", "sweep"], 512, sweep=[1, 2, 4, 8])
    by_name = {p["name"]: p for p in points}
    assert list(by_name) == ["spec-8k-1k-c4", "spec-128k-1k-prefix-c4", "sweep-c1", "sweep-c2", "sweep-c4", "sweep-c8"]
    prefix = by_name["spec-128k-1k-prefix-c4"]
    assert (prefix["input_len"], prefix["output_len"], prefix["scaled"]) == (332, 16, True)
    # 99% of the input is a prefix every request shares.
    assert prefix["prefix_len"] == math.floor(0.99 * 332)
    assert prefix["requested"] == {"input_len": 131024, "output_len": 1024}
    assert by_name["spec-8k-1k-c4"]["prefix_len"] == 0
    assert [by_name["sweep-c%d" % c]["requests"] for c in (1, 2, 4, 8)] == [8, 8, 16, 32]  # max(8, 4c)


def test_points_unscaled_where_they_fit():
    (point,) = plan_points(["spec-128k-1k-prefix"], 250000)
    assert (point["input_len"], point["output_len"], point["prefix_len"], point["scaled"]) == (
        131024,
        1024,
        129713,
        False,
    )


@pytest.mark.parametrize(
    "selected,kwargs,needle",
    [
        (["spec-8k"], {}, "no benchmark scenario 'spec-8k': the scenarios are spec-128k-1k-prefix, spec-8k-1k, sweep"),
        ([], {}, "benchmark_scenarios must be a non-empty list"),
        ("sweep", {}, "benchmark_scenarios must be a non-empty list"),
        (["sweep", "sweep"], {"sweep": [1]}, "lists a scenario twice: sweep-c1"),
        (["sweep"], {}, "scenario sweep is a sweep: give it concurrencies"),
        (["sweep"], {"sweep": [0]}, "a sweep concurrency must be a whole number above 0, not 0"),
        (["spec-8k-1k"], {"overrides": {"spec-8k-1k": {"concurrency": 0}}}, "spec-8k-1k: concurrency must be a whole"),
        (["spec-8k-1k"], {"overrides": {"spec-8k-1k": {"data_num": -1}}}, "spec-8k-1k: data_num must be a whole"),
        (["spec-8k-1k"], {"overrides": {"spec-8k-1k": {"input": 5}}}, "scenario spec-8k-1k has no setting input"),
        (
            ["spec-8k-1k"],
            {"overrides": {"spec-8k": {}}},
            "benchmark_scenario_overrides: no benchmark scenario 'spec-8k'",
        ),
        (["spec-8k-1k"], {"overrides": {"spec-8k-1k": [1]}}, "the overrides of scenario spec-8k-1k must be a mapping"),
        (
            ["spec-8k-1k"],
            {"overrides": {"spec-8k-1k": {"tool": "locust"}}},
            "tool must be one of ais_bench, vllm_bench",
        ),
        (["spec-8k-1k"], {"overrides": {"spec-8k-1k": {"dataset_type": "x"}}}, "dataset_type must be one of"),
        (["spec-8k-1k"], {"overrides": {"spec-8k-1k": {"repeat_rate": 0.5}}}, "needs dataset_type prefix_cache"),
        (
            ["spec-128k-1k-prefix"],
            {"overrides": {"spec-128k-1k-prefix": {"repeat_rate": 1.5}}},
            "repeat_rate must be between 0 and 1",
        ),
        (["spec-8k-1k"], {"overrides": {"spec-8k-1k": {"request_rate": -1}}}, "request_rate must be between 0"),
        (
            ["spec-8k-1k"],
            {"scale": False},
            "scenario spec-8k-1k: input_len 8192 (counted 1.3 times) + output_len 1024 = 11674 tokens",
        ),
    ],
)
def test_points_refused(selected, kwargs, needle):
    kwargs = dict(kwargs)
    sweep = kwargs.pop("sweep", None)
    fit = LengthFit(scale=kwargs.pop("scale", True))
    with pytest.raises(BenchmarkError) as err:
        plan_points(selected, 512, sweep=sweep, fit=fit, **kwargs)
    assert needle in str(err.value)


# --------------------------------------------------------------------------------------------------
# The target: the plan's front door, or explicit settings
# --------------------------------------------------------------------------------------------------
def test_target_from_a_plan_with_k3_concurrency():
    plan = example_plan("mi355x-pd-1p1d-c48")
    tgt = target(plan)
    assert (tgt["host"], tgt["url"]) == (plan["endpoint"]["host"], plan["endpoint"]["url"].rstrip("/"))
    assert tgt["model"] == plan["verify"]["served_model_name"]
    assert (tgt["tokenizer"], tgt["max_model_len"]) == (
        plan["parameters"]["model_path"],
        plan["parameters"]["max_model_len"],
    )
    assert tgt["concurrency"] == plan["parameters"]["concurrency"] == 48  # k3_concurrency of the inventory
    assert sweep_concurrencies(tgt["concurrency"]) == [1, 2, 4, 8, 16, 32, 48]


def test_explicit_settings_win_over_the_plan():
    plan = example_plan("mi355x-pd-1p1d-c8")
    tgt = target(plan, TargetSettings(host="loadgen", endpoint="http://10.0.0.9:9000/", concurrency=3))
    assert (tgt["host"], tgt["url"], tgt["concurrency"]) == ("loadgen", "http://10.0.0.9:9000", 3)
    assert tgt["model"] == plan["verify"]["served_model_name"]


@pytest.mark.parametrize(
    "plan,kwargs,needle",
    [
        (
            None,
            {},
            "the benchmark has no benchmark_host, benchmark_endpoint, benchmark_served_model_name, "
            "benchmark_tokenizer, benchmark_max_model_len: no plan",
        ),
        (None, dict(RECORDED_TARGET, host=""), "the benchmark has no benchmark_host"),
        (None, dict(RECORDED_TARGET, url="ftp://x"), "benchmark_endpoint must be an http(s) URL"),
        (None, dict(RECORDED_TARGET, max_model_len="lots"), "benchmark_max_model_len must be a whole number"),
        (None, dict(RECORDED_TARGET, concurrency=-1), "the sweep's top concurrency (k3_concurrency) must be a whole"),
    ],
)
def test_target_refused(plan, kwargs, needle):
    kwargs = dict(kwargs)
    if "url" in kwargs:
        kwargs["endpoint"] = kwargs.pop("url")
    with pytest.raises(BenchmarkError) as err:
        target(plan, TargetSettings(**kwargs))
    assert needle in str(err.value)


# --------------------------------------------------------------------------------------------------
# The exact commands
# --------------------------------------------------------------------------------------------------
def test_vllm_bench_serve_argv():
    (point,) = list(commands([recorded_point("sweep-c2")], RECORDED_TARGET, "/v/vllm", "/v/ais", "/r/run"))
    assert point["config"] is None
    assert point["dir"] == "/r/run/sweep-c2"
    assert point["argv"] == ["/usr/bin/env", *PROXIES] + [
        "/v/vllm/bin/vllm",
        "bench",
        "serve",
        "--backend",
        "openai-chat",
        "--endpoint",
        "/v1/chat/completions",
        "--base-url",
        "http://127.0.0.1:18101",
        "--model",
        "kimi-k3-sandbox",
        "--tokenizer",
        "/work/main/.cache/sandbox/models/tiny-llama",
        "--dataset-name",
        "random",
        "--random-input-len",
        "64",
        "--random-output-len",
        "16",
        "--num-prompts",
        "8",
        "--max-concurrency",
        "2",
        "--request-rate",
        "inf",
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
        "/r/run/sweep-c2",
        "--result-filename",
        "result.json",
    ]


def test_vllm_bench_options_choose_the_seed_and_the_result_file():
    """A run beside the benchmark's points (tests/traffic.py's rounds) picks its seed and result file;
    the rest of the argv is the point's, and the defaults are the points' own."""
    point = recorded_point("sweep-c2")
    plain = vllm_bench_argv(point, RECORDED_TARGET, "/v", "/r/run")
    assert vllm_bench_argv(point, RECORDED_TARGET, "/v", "/r/run", options=VllmBenchOptions()) == plain
    chosen = vllm_bench_argv(
        point, RECORDED_TARGET, "/v", "/r/run", options=VllmBenchOptions(seed=7, result_filename="round-007.json")
    )
    seed, name = plain.index("--seed") + 1, plain.index("--result-filename") + 1
    assert (plain[seed], plain[name]) == ("0", "result.json")
    assert (chosen[seed], chosen[name]) == ("7", "round-007.json")
    assert [a for i, a in enumerate(chosen) if i not in (seed, name)] == [
        a for i, a in enumerate(plain) if i not in (seed, name)
    ]


@pytest.mark.parametrize("name", SWEEP_NAMES)
def test_the_recorded_vllm_runs_had_this_argv(name):
    """vllm bench serve printed its parsed arguments: they are the ones the argv asks for."""
    (point,) = commands([recorded_point(name)], RECORDED_TARGET, "/v", "/a", "/tmp/bscratch/rec")
    printed = (RAW / name / "stdout.txt").read_text().splitlines()[0]
    for field, value in (
        ("random_input_len", point["input_len"]),
        ("random_output_len", point["output_len"]),
        ("num_prompts", point["requests"]),
        ("max_concurrency", point["concurrency"]),
        ("ignore_eos", True),
        ("percentile_metrics", "'ttft,tpot,itl,e2el'"),
        ("metric_percentiles", "'50,90,99'"),
        ("base_url", "'http://127.0.0.1:18101'"),
        ("model", "'kimi-k3-sandbox'"),
        ("request_rate", "inf"),
    ):
        assert "%s=%s," % (field, value) in printed, field


def test_ais_bench_argv_and_config():
    tgt = dict(RECORDED_TARGET, url="https://front.example:8443")
    (point,) = commands([recorded_point("spec-128k-1k-prefix-c4")], tgt, "/v/vllm", "/v/ais", "/r/run")
    folder = "/r/run/spec-128k-1k-prefix-c4"
    assert point["argv"] == ["/usr/bin/env", *PROXIES] + [
        "/v/ais/bin/ais_bench",
        folder + "/ais_bench_config.py",
        "--mode",
        "perf",
        "--work-dir",
        folder + "/work",
    ]
    model, dataset = _config_dicts(point["config"])
    assert (model["url"], model["host_ip"], model["host_port"]) == ("https://front.example:8443", "front.example", 8443)
    assert (model["model"], model["path"], model["api_key"]) == ("kimi-k3-sandbox", RECORDED_TARGET["tokenizer"], "")
    assert (model["batch_size"], model["max_out_len"], model["request_rate"], model["stream"]) == (4, 16, 0, True)
    assert dataset["config"]["RequestCount"] == 8
    assert dataset["config"]["TokenIdConfig"] == {"RequestSize": 128, "PrefixLen": math.floor(0.99 * 128)}
    assert dataset["abbr"] == "prefix_cache"


def test_the_key_is_only_in_the_host_s_copy_of_the_ais_config():
    point = recorded_point("spec-8k-1k-c1")
    keyed = ais_bench_config(point, RECORDED_TARGET, "sk-secret")
    assert _config_dicts(keyed)[0]["api_key"] == "sk-secret"
    (command,) = commands([point], RECORDED_TARGET, "/v", "/a", "/r")
    assert "sk-secret" not in command["config"] and "sk-secret" not in " ".join(command["argv"])


def _config_dicts(text):
    """The models[0] and datasets[0] dict() calls of an AISBench config, as Python values (names as strings)."""
    tree = ast.parse(text)
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and node.targets[0].id in ("models", "datasets"):
            out[node.targets[0].id] = _value(node.value.elts[0])
    return out["models"], out["datasets"]


def _value(node):
    if isinstance(node, ast.Call):
        return {kw.arg: _value(kw.value) for kw in node.keywords}
    if isinstance(node, ast.Dict):
        return {_value(k): _value(v) for k, v in zip(node.keys, node.values, strict=True)}
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.List):
        return [_value(e) for e in node.elts]
    return ast.literal_eval(node)


@pytest.mark.parametrize("name", AIS_NAMES)
def test_the_recorded_ais_runs_used_the_config_generated_now(name):
    """The configuration each recorded AISBench run read is, statement for statement, the one generated today."""
    recorded = (RAW / name / "ais_bench_config.py").read_text()
    generated = ais_bench_config(recorded_point(name), RECORDED_TARGET)
    assert ast.dump(ast.parse(recorded)) == ast.dump(ast.parse(generated))


def test_remote_dir_must_be_absolute():
    with pytest.raises(BenchmarkError) as err:
        commands([recorded_point("sweep-c1")], RECORDED_TARGET, "/v", "/a", "relative/dir")
    assert "benchmark_remote_dir must be an absolute path, not 'relative/dir'" in str(err.value)


# --------------------------------------------------------------------------------------------------
# Parsers, against the real tools' outputs
# --------------------------------------------------------------------------------------------------
def _stdout_number(text, label):
    match = re.search(r"^%s\s+([0-9.]+)" % re.escape(label), text, re.M)
    assert match, label
    return float(match.group(1))


@pytest.mark.parametrize("name", SWEEP_NAMES)
def test_parse_vllm_bench_serve(name):
    point = parse_point(recorded_point(name), str(RAW / name))
    raw = json.loads((RAW / name / "result.json").read_text())
    stdout = (RAW / name / "stdout.txt").read_text()
    assert (point["completed"], point["failed"]) == (raw["completed"], raw["failed"]) == (8, 0)
    assert point["concurrency"] == raw["max_concurrency"]
    assert point["raw"] == ["result.json", "stdout.txt"]
    # The JSON and the table vllm bench serve printed say the same (the table rounds to 2 places).
    for label, value in (
        ("Successful requests:", point["completed"]),
        ("Output token throughput (tok/s):", point["output_throughput"]),
        ("Request throughput (req/s):", point["request_throughput"]),
        ("P99 TTFT (ms):", point["ttft_ms"]["p99"]),
        ("Median TTFT (ms):", point["ttft_ms"]["p50"]),
        ("P90 TPOT (ms):", point["tpot_ms"]["p90"]),
        ("Mean ITL (ms):", point["itl_ms"]["mean"]),
        ("P99 E2EL (ms):", point["e2el_ms"]["p99"]),
    ):
        assert _stdout_number(stdout, label) == pytest.approx(value, abs=0.006), label


def _ais_table(stdout):
    """AISBench's printed tables: {parameter: [cells]}."""
    rows = {}
    for line in stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("│").split("│")]
        if len(cells) >= 3 and cells[1] == "total":
            rows[cells[0]] = cells[2:]
    return rows


@pytest.mark.parametrize("name", AIS_NAMES)
def test_parse_ais_bench(name):
    point = parse_point(recorded_point(name), str(RAW / name))
    table = _ais_table((RAW / name / "stdout.txt").read_text())
    assert point["completed"] == int(table["Success Requests"][0]) == 8
    assert point["failed"] == int(table["Failed Requests"][0]) == 0
    assert point["request_throughput"] == float(table["Request Throughput"][0].split()[0])
    assert point["output_throughput"] == float(table["Output Token Throughput"][0].split()[0])
    # Average, Min, Max, Median, P75, P90, P99 of the per-request table, in ms.
    for lat, row in (("ttft_ms", "TTFT"), ("tpot_ms", "TPOT"), ("itl_ms", "ITL"), ("e2el_ms", "E2EL")):
        cells = [float(c.split()[0]) for c in table[row][:7]]
        assert [point[lat][p] for p in ("mean", "p50", "p90", "p99")] == [cells[0], cells[3], cells[5], cells[6]]
    assert point["duration_s"] * 1000 == pytest.approx(float(table["Benchmark Duration"][0].split()[0]))
    assert any(f.endswith(".csv") for f in point["raw"]) and "stdout.txt" in point["raw"]


def test_the_prefix_scenario_ran_with_its_prefix():
    point = parse_point(recorded_point("spec-128k-1k-prefix-c4"), str(RAW / "spec-128k-1k-prefix-c4"))
    assert (point["dataset_type"], point["prefix_len"], point["repeat_rate"]) == ("prefix_cache", 126, 0.99)
    log = next((RAW / "spec-128k-1k-prefix-c4" / "work").rglob("prefix_cache.out")).read_text()
    assert "prefix length: 126" in log


def test_a_failed_ais_bench_run_is_named():
    with pytest.raises(BenchmarkError) as err:
        parse_point(recorded_point("spec-8k-1k-c2"), str(FIXTURES / "failed" / "spec-8k-1k-c2"))
    assert "point spec-8k-1k-c2" in str(err.value)
    assert "AISBench wrote no performances/*/*.csv (see its stdout.txt and stderr.txt)" in str(err.value)


def test_a_missing_vllm_result_is_named(tmp_path):
    with pytest.raises(BenchmarkError) as err:
        parse_point(recorded_point("sweep-c1"), str(tmp_path))
    assert "vllm bench serve wrote no result.json" in str(err.value)


@pytest.mark.parametrize(
    "text,needle",
    [
        ("{", "is not JSON"),
        ("[]", "has no 'completed' count"),
        (json.dumps({"completed": 1, "duration": 1, "request_throughput": 1, "output_throughput": 1,
                     "total_token_throughput": 1}), "--percentile-metrics ttft,tpot,itl,e2el"),
    ],
)  # fmt: skip
def test_parse_vllm_bench_refused(text, needle):
    with pytest.raises(BenchmarkError) as err:
        parse_vllm_bench(text)
    assert needle in str(err.value)


def test_parse_ais_bench_refused():
    folder = next((RAW / "spec-8k-1k-c1" / "work").glob("*/performances/kimi-k3"))
    good_csv, good_json = (folder / "synthetic.csv").read_text(), (folder / "synthetic.json").read_text()
    cases = [
        (good_csv, "{", "the common metrics are not JSON"),
        (good_csv, "{}", "have no 'Success Requests'"),
        (good_csv.replace("TTFT,", "XTTFT,"), good_json, "the per-request statistics have no TTFT row"),
        (good_csv.replace(" ms,", " hours,", 1), good_json, "is not a duration (ms, s, us)"),
        (
            good_csv,
            good_json.replace('"Request Throughput"', '"RT"'),
            "the common metrics have no 'Request Throughput'",
        ),
        (good_csv.replace("P90", "P95"), good_json, "the per-request statistics have no P90 column"),
    ]
    for csv_text, json_text, needle in cases:
        with pytest.raises(BenchmarkError) as err:
            parse_ais_bench(csv_text, json_text)
        assert needle in str(err.value)


@pytest.mark.parametrize("cell,ms", [("368.001 ms", 368.001), ("1.5 s", 1500.0), ("250 us", 0.25), (12, 12.0)])
def test_durations_in_ms(cell, ms):
    assert _ms(cell, "x") == pytest.approx(ms)


# --------------------------------------------------------------------------------------------------
# The report: points, summary, plots, baseline, gates
# --------------------------------------------------------------------------------------------------
@pytest.fixture
def recorded_run(tmp_path):
    run = tmp_path / "run-1"
    shutil.copytree(RAW, run / "raw")
    return run, [recorded_point(n) for n in RECORDED_NAMES]


def test_report_writes_points_summary_and_plots(recorded_run):
    run, points = recorded_run
    results = [{"name": p["name"], "rc": 0} for p in points]
    out = report(run, points, ReportSettings(results=results, gates=gate_list()))
    assert out["problems"] == [] and out["failures"] == []
    assert sorted(p.name for p in (run / "points").iterdir()) == [n + ".json" for n in RECORDED_NAMES]
    for name in RECORDED_NAMES:
        written = json.loads((run / "points" / (name + ".json")).read_text())
        assert written == parse_point(recorded_point(name), str(run / "raw" / name))
        assert set(written["ttft_ms"]) == {"mean", "p50", "p90", "p99"}
    summary = (run / "summary.md").read_text()
    assert summary == out["summary"]
    rows = [line for line in summary.splitlines() if line.startswith("| ") and not line.startswith("| point")]
    assert [r.split(" | ")[0][2:] for r in rows] == RECORDED_NAMES
    c4 = json.loads((run / "points" / "sweep-c4.json").read_text())
    (row,) = [r for r in rows if r.startswith("| sweep-c4 |")]
    assert "| %.2f | %.2f |" % (c4["request_throughput"], c4["output_throughput"]) in row
    assert "| %.2f / %.2f |" % (c4["ttft_ms"]["p50"], c4["ttft_ms"]["p99"]) in row
    assert "Every gate passed." in summary
    assert json.loads((run / "summary.json").read_text())["points"] == out["points"]
    assert sorted(Path(p).name for p in out["plots"]) == ["latency.png", "throughput.png"]
    for plot in out["plots"]:
        _assert_png(plot)


def _assert_png(path):
    data = Path(path).read_bytes()
    assert len(data) > 5000
    width, height, rows = read_png(data)
    assert (width, height) == PNG_SIZE
    colours = {row[i : i + 3] for row in rows[::20] for i in range(0, len(row), 60)}
    assert len(colours) > 3, "a blank picture"


def test_scaled_lengths_are_said_in_the_summary(recorded_run):
    run, _points = recorded_run
    point = dict(parse_point(recorded_point("sweep-c1"), str(run / "raw" / "sweep-c1")), scaled=True)
    point["requested"] = {"input_len": 1024, "output_len": 256}
    assert "| 64/16 (scaled from 1024/256) |" in summary_markdown([point], run)


def test_a_point_that_failed_is_a_problem_naming_it(recorded_run, tmp_path):
    run, points = recorded_run
    shutil.copytree(FIXTURES / "failed" / "spec-8k-1k-c2", run / "raw" / "spec-8k-1k-c2", dirs_exist_ok=True)
    shutil.rmtree(run / "raw" / "spec-8k-1k-c2" / "work")
    shutil.copytree(FIXTURES / "failed" / "spec-8k-1k-c2" / "work", run / "raw" / "spec-8k-1k-c2" / "work")
    results = [{"name": p["name"], "rc": 1 if p["name"] == "sweep-c4" else 0} for p in points]
    out = report(run, points, ReportSettings(results=results, gates=gate_list()))
    assert out["problems"] == [
        "benchmark point failed: point spec-8k-1k-c2 (%s/raw/spec-8k-1k-c2): AISBench wrote no performances/*/*.csv "
        "(see its stdout.txt and stderr.txt); run folder %s" % (run, run),
        "benchmark point failed: sweep-c4: vllm_bench exited 1 (its output: %s/raw/sweep-c4/stdout.txt, stderr.txt); "
        "run folder %s" % (run, run),
    ]
    assert len(out["points"]) == len(points) - 2
    assert "- benchmark point failed: sweep-c4" in out["summary"]


def test_gates_pass(recorded_run):
    run, points = recorded_run
    measured = [parse_point(p, str(run / "raw" / p["name"])) for p in points]
    worst_ttft = max(p["ttft_ms"]["p99"] for p in measured)
    lowest = min(p["output_throughput"] for p in measured)
    extra = [{"metric": "e2el_ms.p90", "max": 10_000, "scenario": "sweep"}]
    gates = gate_list(Thresholds(0, worst_ttft, lowest), extra=extra)
    assert apply_gates(measured, gates, str(run)) == []


def test_gates_fail_naming_metric_value_threshold_and_folder(recorded_run):
    run, points = recorded_run
    measured = {p["name"]: parse_point(p, str(run / "raw" / p["name"])) for p in points}
    c4 = measured["sweep-c4"]
    limit = math.floor(c4["ttft_ms"]["p99"] * 10) / 10 - 0.1  # just below what sweep-c4 measured
    gates = gate_list(
        Thresholds(max_ttft_p99_ms=limit), extra=[{"metric": "output_throughput", "min": 1e9, "scenario": "spec-8k-1k"}]
    )
    failures = apply_gates(list(measured.values()), gates, str(run))
    expected = "benchmark gate failed: point sweep-c4: ttft_ms.p99 = %.2f ms, above the threshold %s ms " % (
        c4["ttft_ms"]["p99"],
        ("%.1f" % limit).rstrip("0").rstrip("."),
    )
    assert expected + "(benchmark_max_ttft_p99_ms); run folder %s" % run in failures
    slow = [f for f in failures if "output_throughput" in f]
    assert len(slow) == 3 and all(f.startswith("benchmark gate failed: point spec-8k-1k-c") for f in slow)
    c1 = measured["spec-8k-1k-c1"]
    assert (
        "benchmark gate failed: point spec-8k-1k-c1: output_throughput = %.2f tok/s, below the threshold 1000000000 "
        "tok/s (benchmark_gates[0]); run folder %s" % (c1["output_throughput"], run)
    ) in slow
    # Every point at or below the limit passed.
    assert all(
        "point %s: ttft_ms.p99" % n not in " ".join(failures)
        for n, p in measured.items()
        if p["ttft_ms"]["p99"] <= limit
    )


def test_failed_requests_fail_the_default_gate(recorded_run):
    run, points = recorded_run
    measured = parse_point(recorded_point("sweep-c1"), str(run / "raw" / "sweep-c1"))
    broken = dict(measured, failed=2, completed=measured["completed"] - 2)
    assert apply_gates([measured], gate_list(), str(run)) == []
    assert apply_gates([broken], gate_list(), str(run)) == [
        "benchmark gate failed: point sweep-c1: failed = 2, above the threshold 0 (benchmark_max_failed); "
        "run folder %s" % run
    ]


def _baseline_from(run, tmp_path, factor):
    """A baseline run folder whose every point had ``factor`` times this run's output throughput."""
    base = tmp_path / "baseline"
    (base / "points").mkdir(parents=True)
    for path in (run / "points").iterdir():
        point = json.loads(path.read_text())
        point["output_throughput"] *= factor
        (base / "points" / path.name).write_text(json.dumps(point))
    return base


def test_baseline_comparison_and_regression_gate(recorded_run, tmp_path):
    run, points = recorded_run
    report(run, points, ReportSettings(gates=gate_list()))
    base = _baseline_from(run, tmp_path, 1.5)
    gates = gate_list(Thresholds(max_regression_percent=10, regression_metrics=["output_throughput", "ttft_ms.p99"]))
    out = report(run, points, ReportSettings(gates=gates, baseline_dir=str(base)))
    rows = {(r["point"], r["metric"]): r for r in out["comparison"]}
    assert len(rows) == 2 * len(points)
    throughput = rows[("sweep-c2", "output_throughput")]
    assert throughput["regression_percent"] == pytest.approx(100 * (1 - 1 / 1.5))
    assert rows[("sweep-c2", "ttft_ms.p99")]["regression_percent"] == 0
    assert len(out["failures"]) == len(points)
    value = throughput["value"]
    assert (
        "benchmark gate failed: point sweep-c2: output_throughput = %.2f tok/s, 33.3%% worse than the baseline's %.2f "
        "tok/s, above the threshold of 10%% regression (benchmark_max_regression_percent); run folder %s; baseline %s"
        % (value, value * 1.5, run, base)
    ) in out["failures"]
    assert "## Against the baseline %s" % base in out["summary"]
    assert (
        "| sweep-c2 | output_throughput | %.2f tok/s | %.2f tok/s | +33.3%% |" % (value, value * 1.5) in out["summary"]
    )
    assert sorted(Path(p).name for p in out["plots"]) == ["baseline.png", "latency.png", "throughput.png"]
    _assert_png(run / "baseline.png")
    # Within the threshold, and better than the baseline: no failure.
    within = gate_list(Thresholds(max_regression_percent=50, regression_metrics=["output_throughput"]))
    assert report(run, points, ReportSettings(gates=within, baseline_dir=str(base)))["failures"] == []
    better = _baseline_from(run, tmp_path / "better", 0.5)
    out = report(run, points, ReportSettings(gates=gates, baseline_dir=str(better)))
    assert out["failures"] == [] and rows and out["comparison"][0]["regression_percent"] < 0


def test_a_baseline_that_is_not_a_run_folder(tmp_path):
    with pytest.raises(BenchmarkError) as err:
        load_points(tmp_path)
    assert "the baseline %s is not a benchmark run folder (it has no points/)" % tmp_path in str(err.value)


@pytest.mark.parametrize(
    "extra,needle",
    [
        ([{"metric": "ttft.p99", "max": 1}], "benchmark_gates[0]: no benchmark metric 'ttft.p99': the metrics are"),
        ([{"metric": "failed"}], "a gate on failed needs exactly one of max, min or max_regression_percent"),
        ([{"metric": "failed", "max": 1, "min": 0}], "needs exactly one of max, min"),
        ([{"metric": "failed", "maximum": 1}], "benchmark_gates[0]: a gate has no key maximum"),
        ([{"metric": "failed", "max": "lots"}], "benchmark_gates[0]: max must be a number, not 'lots'"),
        (["failed < 1"], "a benchmark gate must be a mapping"),
        ({"metric": "failed"}, "benchmark_gates must be a list of gates"),
    ],
)
def test_bad_gates_refused(extra, needle):
    with pytest.raises(BenchmarkError) as err:
        gate_list(extra=extra)
    assert needle in str(err.value)


def test_unknown_regression_metric_refused():
    with pytest.raises(BenchmarkError) as err:
        gate_list(Thresholds(max_regression_percent=5, regression_metrics=["tput"]))
    assert "benchmark_max_regression_percent: no benchmark metric 'tput'" in str(err.value)


def test_every_threshold_variable_makes_its_gate():
    gates = gate_list(Thresholds(0, 2000, 10, 5, ["output_throughput"]))
    assert [(g["metric"], g["source"]) for g in gates] == [
        ("failed", "benchmark_max_failed"),
        ("ttft_ms.p99", "benchmark_max_ttft_p99_ms"),
        ("output_throughput", "benchmark_min_output_throughput"),
        ("output_throughput", "benchmark_max_regression_percent"),
    ]
    assert gate_list(Thresholds(max_failed=None)) == []


# --------------------------------------------------------------------------------------------------
# The shims
# --------------------------------------------------------------------------------------------------
def test_filters_refuse_with_the_message():
    filters = Filters().filters()
    with pytest.raises(AnsibleFilterError) as err:
        filters["benchmark_points"](RECORDED_TARGET, ["nope"], remote_dir="/r")
    assert "no benchmark scenario 'nope'" in str(err.value)
    with pytest.raises(AnsibleFilterError) as err:
        filters["benchmark_target"](None)
    assert "the benchmark has no benchmark_host" in str(err.value)
    with pytest.raises(AnsibleFilterError) as err:
        filters["benchmark_gates"](0, gates=[{"metric": "x", "max": 1}])
    assert "no benchmark metric 'x'" in str(err.value)


def test_filter_points_derive_the_sweep_from_the_target():
    points = Filters().filters()["benchmark_points"](dict(RECORDED_TARGET, concurrency=8), ["sweep"], remote_dir="/r")
    assert [p["concurrency"] for p in points] == [1, 2, 4, 8]
    points = Filters().filters()["benchmark_points"](RECORDED_TARGET, ["sweep"], sweep=[3], remote_dir="/r")
    assert [p["name"] for p in points] == ["sweep-c3"]


def test_exit_codes_from_the_registered_loop():
    registered = [
        {"item": {"name": "a"}, "rc": 0, "stdout": ""},
        {"item": {"name": "b"}, "rc": 2},
        {"item": {"name": "c"}, "failed": True, "msg": "async task did not complete within the requested time"},
        {"name": "d", "rc": 0},
        "junk",
    ]
    assert _exit_codes(registered) == [
        {"name": "a", "rc": 0},
        {"name": "b", "rc": 2},
        {"name": "c", "rc": "no exit status (async task did not complete within the requested time)"},
        {"name": "d", "rc": 0},
    ]
