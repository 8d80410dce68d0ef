"""The accuracy evaluation's decisions: inspect's argv per benchmark, scores from recorded inspect
logs, the gates, the service check's verdicts, and the benchmarks' dataset readers and scoring."""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT, skip_or_fail

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.evaluate import _runs as ev
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.evaluate import _scores as ev_scores

FIXTURES = ROOT / "tests" / "unit" / "fixtures" / "eval"
K3_EVALS = ROOT / "roles" / "evaluate" / "files" / "kimi_evals"


def _load(name):
    """A module of the role's kimi_evals, loaded without leaving __pycache__ in the role's files."""
    spec = importlib.util.spec_from_file_location("kimi_evals_" + name, K3_EVALS / (name + ".py"))
    module = importlib.util.module_from_spec(spec)
    dont, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        spec.loader.exec_module(module)
    finally:
        sys.dont_write_bytecode = dont
    return module


formats = _load("formats")
service_check = _load("service_check")

SETTINGS = {
    "benchmarks": ["ocrbench", "mmmu_pro", "toolcall"],
    "datasets": {"ocrbench": "/data/OCRBench", "mmmu_pro": "/data/MMMU_Pro", "toolcall": "/data/tc.jsonl"},
    "model": "kimi-k3",
    "inspect": "/opt/eval/bin/inspect",
    "tasks": "/srv/run/tasks/kimi_evals/tasks.py",
    "log_dir": "/srv/run",
}


def spec_argv(benchmark, task, dataset, tokens):
    return [
        "/opt/eval/bin/inspect",
        "eval",
        "/srv/run/tasks/kimi_evals/tasks.py@" + task,
        "--model",
        "openai-api/kimi/kimi-k3",
        "-T",
        "dataset=" + dataset,
        "--max-tokens",
        tokens,
        "--max-connections",
        "16",
        "--temperature",
        "1.0",
        "--top-p",
        "1.0",
        "--epochs",
        "1",
        "--reasoning-effort",
        "max",
        "-M",
        "stream=true",
        "--extra-body",
        '{"chat_template_kwargs": {"thinking": true}}',
        "--log-dir",
        "/srv/run/" + benchmark,
        "--display",
        "plain",
    ]


@pytest.mark.parametrize(
    "benchmark,task,dataset,tokens",
    [
        ("ocrbench", "ocrbench", "/data/OCRBench", "8192"),
        ("mmmu_pro", "mmmu_pro", "/data/MMMU_Pro", "96000"),
        ("toolcall", "toolcall", "/data/tc.jsonl", "32768"),
    ],
)
def test_argv_per_benchmark_carries_the_specification_settings(benchmark, task, dataset, tokens):
    runs = {r["benchmark"]: r for r in ev.eval_runs(SETTINGS)["runs"]}
    assert runs[benchmark]["argv"] == spec_argv(benchmark, task, dataset, tokens)
    assert runs[benchmark]["log_dir"] == "/srv/run/" + benchmark


def test_runs_keep_the_given_order_and_say_what_the_service_check_needs():
    out = ev.eval_runs(dict(SETTINGS, benchmarks=["toolcall", "ocrbench"]))
    assert [r["title"] for r in out["runs"]] == ["ToolCall", "OCRBench"]
    assert out["max_tokens"] == {"toolcall": 32768, "ocrbench": 8192}
    assert out["images"] is True
    assert out["service_check"] == [
        "/opt/eval/bin/python",
        "/srv/run/tasks/kimi_evals/service_check.py",
        "--model",
        "kimi-k3",
        "--max-tokens",
        "16",
        "--benchmark-max-tokens",
        "toolcall=32768,ocrbench=8192",
        "--extra-body",
        '{"chat_template_kwargs": {"thinking": true}}',
        "--timeout",
        "600",
        "--image",
        "--require-reasoning",
    ]
    text_only = ev.eval_runs(dict(SETTINGS, benchmarks=["toolcall"], check_reasoning=False))
    assert text_only["images"] is False
    assert "--image" not in text_only["service_check"]
    assert "--require-reasoning" not in text_only["service_check"]


@pytest.mark.parametrize(
    "overrides,benchmark,present,absent",
    [
        ({"max_tokens": {"mmmu_pro": 64}}, "mmmu_pro", ["--max-tokens", "64"], []),
        ({"max_tokens": {"mmmu_pro": 64}}, "ocrbench", ["--max-tokens", "8192"], []),
        ({"limit": 5}, "toolcall", ["--limit", "5"], []),
        ({"thinking": False}, "ocrbench", [], ["--extra-body"]),
        ({"stream": "false"}, "ocrbench", ["stream=false"], ["stream=true"]),
        ({"temperature": "0.6", "top_p": 0.95}, "ocrbench", ["0.6", "0.95"], []),
        ({"reasoning_effort": "high", "epochs": 2}, "ocrbench", ["high", "--epochs", "2"], ["max"]),
        ({"extra_args": ["--seed", 42]}, "ocrbench", ["--seed", "42"], []),
        (
            {"thinking_body": {"chat_template_kwargs": {"enable_thinking": True}}},
            "ocrbench",
            ['{"chat_template_kwargs": {"enable_thinking": true}}'],
            [],
        ),
    ],
)
def test_settings_are_overridable(overrides, benchmark, present, absent):
    runs = {r["benchmark"]: r for r in ev.eval_runs(dict(SETTINGS, **overrides))["runs"]}
    argv = runs[benchmark]["argv"]
    text = " ".join(argv)
    for item in present:
        assert item in argv, (item, argv)
    for item in absent:
        assert item not in text.split(), (item, argv)


@pytest.mark.parametrize(
    "overrides,needle",
    [
        ({"benchmarks": []}, "evaluate_benchmarks must be a non-empty list"),
        ({"benchmarks": ["mmlu"]}, "unknown benchmark 'mmlu' in evaluate_benchmarks"),
        ({"benchmarks": ["ocrbench", "ocrbench"]}, "listed twice"),
        ({"datasets": {"ocrbench": "/d"}}, "evaluate_datasets has no local path for mmmu_pro, toolcall"),
        ({"datasets": {"ocrbench": "/d", "mmmu_pro": "/d", "toolcall": "/d", "mmlu": "/d"}}, "unknown benchmarks"),
        ({"datasets": "/data"}, "evaluate_datasets must be a mapping"),
        ({"model": ""}, "served model name"),
        ({"max_tokens": {"ocrbench": 0}}, "evaluate_max_tokens.ocrbench must be a whole number >= 1"),
        ({"max_tokens": {"ocrbench": "lots"}}, "evaluate_max_tokens.ocrbench must be a whole number"),
        ({"max_connections": True}, "evaluate_max_connections must be a whole number"),
        ({"temperature": 3}, "evaluate_temperature must be a number from 0 to 2"),
        ({"top_p": 0}, "evaluate_top_p must be above 0"),
        ({"top_p": "nan"}, "evaluate_top_p must be a number from 0 to 1"),
        ({"epochs": 0}, "evaluate_epochs must be a whole number >= 1"),
        ({"reasoning_effort": "maximum"}, "evaluate_reasoning_effort must be one of"),
        ({"stream": "maybe"}, "evaluate_stream must be true or false"),
        ({"thinking_body": ["thinking"]}, "evaluate_thinking_body must be a mapping"),
        ({"limit": -1}, "evaluate_limit must be a whole number >= 1"),
        ({"extra_args": "--seed 1"}, "evaluate_extra_args must be a list"),
        ({"extra_args": ["--max-tokens", "9"]}, "may not set --max-tokens"),
        ({"extra_args": ["--model=openai/gpt"]}, "may not set --model"),
        ({"extra_args": ["-M", "api_key=sk-1"]}, "may not set -M"),
        ({"extra_args": ["--metadata", "api_key=sk-1"]}, "may not carry an API key"),
    ],
)
def test_bad_settings_are_refused_with_the_variable_named(overrides, needle):
    with pytest.raises(ev.EvaluateError) as err:
        ev.eval_runs(dict(SETTINGS, **overrides))
    assert needle in str(err.value)
    assert "sk-1" not in str(err.value)


def test_settings_must_be_a_mapping():
    with pytest.raises(ev.EvaluateError, match="must be a mapping"):
        ev.eval_runs(["ocrbench"])


@pytest.mark.parametrize(
    "endpoint,base,no_proxy",
    [
        ("http://10.0.0.5:8000", "http://10.0.0.5:8000/v1", "localhost,127.0.0.1,10.0.0.5"),
        ("http://10.0.0.5:8000/", "http://10.0.0.5:8000/v1", "localhost,127.0.0.1,10.0.0.5"),
        ("https://front.example:443/v1", "https://front.example:443/v1", "localhost,127.0.0.1,front.example"),
        ("http://127.0.0.1:18102", "http://127.0.0.1:18102/v1", "localhost,127.0.0.1"),
    ],
)
def test_environment_points_at_the_endpoint_and_bypasses_proxies(endpoint, base, no_proxy):
    env = ev.environment(endpoint, "/srv/run", "/etc/k3/ca.pem")
    assert env["KIMI_BASE_URL"] == base
    assert env["NO_PROXY"] == env["no_proxy"] == no_proxy
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy"):
        assert env[name] == ""
    assert env["INSPECT_LOG_DIR"] == "/srv/run"
    assert env["SSL_CERT_FILE"] == "/etc/k3/ca.pem"
    assert "KIMI_API_KEY" not in env


@pytest.mark.parametrize("endpoint", ["10.0.0.5:8000", "ftp://host/x", "", None])
def test_environment_refuses_a_non_http_endpoint(endpoint):
    with pytest.raises(ev.EvaluateError, match="evaluate_endpoint"):
        ev.environment(endpoint)


def test_retry_argv_resumes_in_the_log_folder():
    assert ev.retry_argv("/opt/eval/bin/inspect", "/srv/run/ocrbench/x.eval", 8) == [
        "/opt/eval/bin/inspect",
        "eval-retry",
        "/srv/run/ocrbench/x.eval",
        "--log-dir",
        "/srv/run/ocrbench",
        "--max-connections",
        "8",
    ]


def header(name):
    return (FIXTURES / name).read_text()


@pytest.mark.parametrize(
    "benchmark,fixture,status,accuracy,stderr,samples,completed",
    [
        ("ocrbench", "ocrbench.header.json", "success", 0.0, 0.0, 4, 4),
        ("mmmu_pro", "mmmu_pro.header.json", "success", 0.0, 0.0, 4, 4),
        ("toolcall", "toolcall.header.json", "success", 0.25, 0.25, 4, 4),
        ("ocrbench", "ocrbench-error.header.json", "error", None, None, 0, 0),
        ("ocrbench", "ocrbench-retried.header.json", "success", 0.0, 0.0, 4, 4),
    ],
)
def test_scores_are_read_from_recorded_inspect_logs(benchmark, fixture, status, accuracy, stderr, samples, completed):
    got = ev_scores.score_of(benchmark, header(fixture), "/srv/run/%s/x.eval" % benchmark)
    assert (got["status"], got["accuracy"], got["stderr"], got["samples"], got["completed"]) == (
        status,
        accuracy,
        stderr,
        samples,
        completed,
    )
    assert got["title"] == ev.BENCHMARKS[benchmark]["title"]
    if status == "error":
        assert "APIConnectionError" in got["error"]
    else:
        assert got["scorer"] in ("ocrbench_match", "option_letter", "tool_call_match")


def test_the_toolcall_log_file_is_what_the_header_describes():
    """The recorded .eval is inspect's zip; its header.json is what `inspect log dump --header-only` printed."""
    import zipfile

    with zipfile.ZipFile(FIXTURES / "toolcall.eval") as archive:
        names = archive.namelist()
    assert "header.json" in names and any(n.startswith("samples/") for n in names)
    assert json.loads(header("toolcall.header.json"))["eval"]["task"] == "toolcall"


def test_read_scores_takes_the_registered_dump_loop():
    registered = {
        "results": [
            {"item": {"benchmark": "toolcall", "log": "/r/toolcall/a.eval"}, "stdout": header("toolcall.header.json")},
            {"item": {"benchmark": "ocrbench", "log": "/r/ocrbench/b.eval"}, "stdout": header("ocrbench.header.json")},
        ]
    }
    scores = ev_scores.read_scores(registered)
    assert [(s["benchmark"], s["accuracy"], s["log"]) for s in scores] == [
        ("toolcall", 0.25, "/r/toolcall/a.eval"),
        ("ocrbench", 0.0, "/r/ocrbench/b.eval"),
    ]
    assert ev_scores.unfinished(scores) == []
    error = ev_scores.read_scores(
        [{"benchmark": "ocrbench", "header": header("ocrbench-error.header.json"), "log": "/x"}]
    )
    assert [s["benchmark"] for s in ev_scores.unfinished(error)] == ["ocrbench"]


@pytest.mark.parametrize(
    "benchmark,value,needle",
    [
        ("ocrbench", header("toolcall.header.json"), "is the log of task 'toolcall', not ocrbench"),
        ("ocrbench", "not json", "not an inspect log header (not JSON"),
        ("ocrbench", {"status": "success"}, "not an inspect log header (no eval or status)"),
        ("mmlu", header("ocrbench.header.json"), "unknown benchmark 'mmlu'"),
        (
            "ocrbench",
            json.dumps(dict(json.loads(header("ocrbench.header.json")), results={"scores": []})),
            "finished but holds no accuracy",
        ),
    ],
)
def test_bad_logs_are_refused(benchmark, value, needle):
    with pytest.raises(ev.EvaluateError) as err:
        ev_scores.score_of(benchmark, value)
    assert needle in str(err.value)


def test_newest_log_is_picked_and_a_missing_log_names_the_benchmark():
    run = {"benchmark": "ocrbench", "title": "OCRBench", "log_dir": "/r/ocrbench"}
    found = {
        "results": [
            {
                "item": run,
                "files": [
                    {"path": "/r/ocrbench/2026-a.eval", "mtime": 10.0},
                    {"path": "/r/ocrbench/2026-b.eval", "mtime": 20.0},
                    {"path": "/r/ocrbench/notes.txt", "mtime": 30.0},
                ],
            }
        ]
    }
    assert ev_scores.newest_logs(found) == [
        {"benchmark": "ocrbench", "title": "OCRBench", "log": "/r/ocrbench/2026-b.eval"}
    ]
    empty = {"results": [{"item": run, "files": []}]}
    ran = {"results": [{"item": run, "rc": 1, "stderr": "Traceback\nDatasetError: OCRBench dataset /d does not exist"}]}
    with pytest.raises(ev.EvaluateError) as err:
        ev_scores.newest_logs(empty, ran)
    assert str(err.value) == (
        "OCRBench wrote no log in /r/ocrbench: inspect exited 1: DatasetError: OCRBench dataset /d does not exist"
    )


def scores(*names):
    return [
        ev_scores.score_of(n.split("-")[0], header(n + ".header.json"), "/r/%s/x.eval" % n.split("-")[0]) for n in names
    ]


@pytest.mark.parametrize(
    "gates,failing",
    [
        ({}, []),
        ({"ocrbench": 0, "mmmu_pro": 0, "toolcall": 0}, []),
        ({"toolcall": 0.25}, []),
        ({"toolcall": "0.3"}, ["ToolCall"]),
        ({"ocrbench": 1, "toolcall": 1}, ["OCRBench", "ToolCall"]),
        ({"mmmu_pro": None}, []),
    ],
)
def test_gates_both_ways(gates, failing):
    got = ev_scores.gate_failures(scores("ocrbench", "mmmu_pro", "toolcall"), gates, "/runs/r1/")
    assert [m.split(" ")[0] for m in got] == failing
    for message in got:
        name = {"OCRBench": "ocrbench", "ToolCall": "toolcall"}[message.split(" ")[0]]
        assert "below its gate" in message
        assert "evaluate_gates.%s" % name in message
        assert "logs in /runs/r1/%s" % name in message
    if failing == ["OCRBench", "ToolCall"]:
        assert got[1].startswith("ToolCall scored 0.2500, below its gate 1.0000")


def test_an_unfinished_run_fails_its_gate_with_the_retry_command():
    (message,) = ev_scores.gate_failures(scores("ocrbench-error"), {}, "/runs/r1")
    assert message.startswith("OCRBench did not finish (status error, 0 of 0 samples: RetryError")
    assert "logs in /runs/r1/ocrbench" in message
    assert message.endswith("`inspect eval-retry /r/ocrbench/x.eval`")


def test_a_remote_run_names_its_host_and_the_logs_kept_on_the_controller():
    (message,) = ev_scores.gate_failures(scores("ocrbench-error"), {}, "/runs/r1", "k3-front")
    assert "logs in /runs/r1/ocrbench; resume it on k3-front with `inspect eval-retry /r/ocrbench/x.eval`" in message
    (kept,) = ev_scores.kept_logs(scores("toolcall"), "/runs/r1/")
    assert (kept["log"], kept["kept"]) == ("/r/toolcall/x.eval", "/runs/r1/toolcall/x.eval")


@pytest.mark.parametrize(
    "gates,needle",
    [
        ({"mmlu": 0.5}, "evaluate_gates names unknown benchmark 'mmlu'"),
        ({"ocrbench": 1.5}, "evaluate_gates.ocrbench (an accuracy) must be a number from 0 to 1"),
        ({"ocrbench": "high"}, "evaluate_gates.ocrbench (an accuracy) must be a number"),
        ([0.5], "evaluate_gates must be a mapping"),
    ],
)
def test_bad_gates_are_refused(gates, needle):
    with pytest.raises(ev.EvaluateError) as err:
        ev_scores.gate_failures(scores("ocrbench"), gates, "/r")
    assert needle in str(err.value)


def test_score_table():
    lines = ev_scores.score_table(scores("ocrbench", "toolcall", "ocrbench-error"), {"toolcall": 0.2, "ocrbench": 0.5})
    assert lines == [
        "benchmark  accuracy  stderr  samples  gate    result",
        "OCRBench   0.0000    0.0000  4/4      0.5000  FAIL",
        "ToolCall   0.2500    0.2500  4/4      0.2000  pass",
        "OCRBench   -         -       0/0      0.5000  NOT FINISHED (error)",
    ]
    assert ev_scores.score_table(scores("mmmu_pro"))[1].endswith("reported")


@pytest.mark.parametrize(
    "fixture,failures",
    [
        ("service-check-pass.json", []),
        ("service-check-no-reasoning.json", ["reasoning check failed: no reasoning in the answer"]),
        ("service-check-spec-tokens.json", ["max_model_len check failed: max output tokens {'mmmu_pro': 96000"]),
        (
            "service-check-wrong-model.json",
            ["models check failed: the endpoint lists ['kimi-k3-sandbox'], not kimi-k3"],
        ),
    ],
)
def test_service_check_verdicts_from_recorded_answers(fixture, failures):
    got = ev_scores.service_failures(header(fixture))
    assert len(got) == len(failures)
    for message, needle in zip(got, failures, strict=True):
        assert message.startswith("http://127.0.0.1:18102/v1: ")
        assert needle in message


@pytest.mark.parametrize("value", ["oops", "{}", '{"checks": []}', 3])
def test_a_service_check_without_checks_is_refused(value):
    with pytest.raises(ev.EvaluateError):
        ev_scores.service_failures(value)


# --- the service check's judges on recorded answers -------------------------------------------
def test_judges_on_recorded_answers():
    models = json.loads(header("models.json"))
    assert service_check.judge_models(200, models, "", "kimi-k3-sandbox") == (True, "lists kimi-k3-sandbox", 512)
    ok, detail, _unused = service_check.judge_models(200, models, "", "kimi-k3")
    assert not ok and "not kimi-k3" in detail
    assert service_check.judge_models(401, {"error": {"message": "Unauthorized"}}, "", "m")[:2] == (
        False,
        "GET /v1/models answered 401: Unauthorized",
    )
    assert service_check.judge_stream(200, header("stream-3-tokens.txt"), 3)[0] is True
    assert service_check.judge_stream(200, header("stream-3-tokens.txt"), 2) == (
        False,
        "the stream's usage is {'prompt_tokens': 10, 'total_tokens': 13, 'completion_tokens': 3} for max_tokens=2",
    )
    assert service_check.judge_stream(200, header("stream-3-tokens.txt").replace("data: [DONE]", ""), 3)[0] is False
    refused = {"error": {"message": "top_p must be in (0, 1], got 1.5.", "code": 400}}
    assert service_check.judge_refused(400, refused, "", "top_p=1.5")[0] is True
    assert "may drop the parameter" in service_check.judge_refused(200, {"choices": []}, "", "top_p=1.5")[1]
    # vllm-router (P/D mode, the sandbox's front door) validates the body itself: 422, plain text (recorded).
    router = (
        "Failed to deserialize the JSON body into the target type: reasoning_effort: unknown variant "
        "`not-an-effort`, expected one of `none`, `minimal`, `low`, `medium`, `high`, `xhigh`, `max` "
        "at line 1 column 120"
    )
    assert service_check.judge_refused(422, None, router, "reasoning_effort=not-an-effort")[0] is True
    assert service_check.judge_refused(404, None, "not found", "reasoning_effort=not-an-effort")[0] is False
    assert service_check.judge_max_model_len(None, {"ocrbench": 8192})[0] is True
    assert service_check.judge_max_model_len(286720, {"toolcall": 32768, "mmmu_pro": 96000})[0] is True
    answer = {
        "choices": [{"message": {"content": "42", "reasoning": "17 + 25"}, "finish_reason": "stop"}],
        "usage": {"completion_tokens": 9},
    }
    assert service_check.judge_completion(200, answer, "", 16) == (
        True,
        "9 completion tokens (max_tokens=16), finish_reason stop",
    )
    assert service_check.judge_completion(200, answer, "", 8)[0] is False
    assert service_check.judge_reasoning(answer) == (True, "7 characters of reasoning")


# --- the benchmarks' scoring rules and dataset readers ----------------------------------------
@pytest.mark.parametrize(
    "prediction,answers,dataset,correct",
    [
        ("The sign says QUARTZ lantern.", ["quartz lantern"], "IIIT5K", True),
        ("quartzlantern", ["QUARTZLANTERN"], "IIIT5K", True),
        ("QUARTZ", ["QUARTZLANTERN"], "IIIT5K", False),
        ("", ["a"], "SVT", False),
        ("x ^ {2} + 7 y = 31", ["x^{2}+7y=31"], "HME100k", True),
        ("X^{2}+7Y=31", ["x^{2}+7y=31"], "HME100k", False),
        ("it is KX-90213", ["KX-90213", "90213"], "docVQA", True),
    ],
)
def test_ocrbench_rule(prediction, answers, dataset, correct):
    assert formats.ocrbench_correct(prediction, answers, dataset) is correct


@pytest.mark.parametrize(
    "text,n,letter",
    [
        ("Reasoning...\nAnswer: C", 10, "C"),
        ("Answer: (J)", 10, "J"),
        ("answer: b. Then Answer: D", 10, "D"),
        ("I pick (B) over (E)", 10, "E"),
        ("C", 10, "C"),
        ("(h).", 10, "H"),
        ("Answer: J", 4, None),
        ("gibberish 41 engine", 10, None),
        ("", 10, None),
        (None, 10, None),
    ],
)
def test_option_letter_extraction(text, n, letter):
    assert formats.extract_letter(text, n) == letter


@pytest.mark.parametrize(
    "calls,expected,correct",
    [
        (
            [{"name": "get_weather", "arguments": {"city": "Quito"}}],
            [{"name": "get_weather", "arguments": {"city": "Quito"}}],
            True,
        ),
        (
            [{"name": "get_weather", "arguments": '{"city": "Quito"}'}],
            [{"name": "get_weather", "arguments": {"city": "Quito"}}],
            True,
        ),
        (
            [{"name": "get_weather", "arguments": {"city": "Lima"}}],
            [{"name": "get_weather", "arguments": {"city": "Quito"}}],
            False,
        ),
        (
            [{"name": "search", "arguments": {"city": "Quito"}}],
            [{"name": "get_weather", "arguments": {"city": "Quito"}}],
            False,
        ),
        ([{"name": "get_weather", "arguments": "{not json"}], [{"name": "get_weather", "arguments": {}}], False),
        ([], [], True),
        ([{"name": "get_weather", "arguments": {}}], [], False),
        (None, [{"name": "get_weather", "arguments": {}}], False),
    ],
)
def test_toolcall_rule(calls, expected, correct):
    assert formats.toolcall_correct(calls, expected) is correct


def test_readers_of_the_json_and_jsonl_layouts(tmp_path):
    root = tmp_path / "OCRBench"
    (root / "OCRBench_Images" / "IIIT5K").mkdir(parents=True)
    (root / "OCRBench_Images" / "IIIT5K" / "1.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    items = [
        {
            "dataset_name": "IIIT5K",
            "id": 7,
            "image_path": "IIIT5K/1.png",
            "question": "q?",
            "answers": "ABC",
            "type": "Regular Text Recognition",
        }
    ]
    (root / "OCRBench.json").write_text(json.dumps(items))
    (record,) = formats.ocrbench_records(str(root))
    assert record == {
        "id": "7",
        "question": "q?",
        "answers": ["ABC"],
        "dataset": "IIIT5K",
        "type": "Regular Text Recognition",
        "image": ("path", str(root / "OCRBench_Images" / "IIIT5K/1.png")),
    }
    jsonl = tmp_path / "tc.jsonl"
    jsonl.write_text(
        json.dumps(
            {
                "id": "a",
                "messages": [{"role": "user", "content": "hi"}],
                "tools": [],
                "expected": {"name": "f", "arguments": '{"x": 1}'},
            }
        )
        + "\n\n"
    )
    assert formats.toolcall_records(str(jsonl))[0]["expected"] == [{"name": "f", "arguments": {"x": 1}}]


@pytest.mark.parametrize(
    "reader,layout,needle",
    [
        ("ocrbench_records", None, "OCRBench dataset {p} does not exist"),
        ("ocrbench_records", {}, "has neither OCRBench.json nor parquet files"),
        ("ocrbench_records", {"OCRBench.json": "{}"}, "is not a JSON list"),
        (
            "ocrbench_records",
            {"OCRBench.json": '[{"image_path": "x.png", "question": "q", "answers": "a"}]'},
            "image x.png not found",
        ),
        ("ocrbench_records", {"OCRBench.json": '[{"image_path": "x.png", "question": "q"}]'}, "has no 'answers'"),
        ("mmmu_pro_records", {}, "has no parquet files (vision/*.parquet)"),
        ("toolcall_records", {}, "has no .jsonl file"),
        ("toolcall_records", {"a.jsonl": "{oops\n"}, "line 1 is not JSON"),
        ("toolcall_records", {"a.jsonl": '{"messages": []}\n'}, "line 1 has no messages"),
        (
            "toolcall_records",
            {"a.jsonl": '{"messages": [{"role": "user"}], "expected": [{"arguments": {}}]}\n'},
            "an expected call without a name",
        ),
        (
            "toolcall_records",
            {"a.jsonl": '{"messages": [{"role": "user"}], "tools": [{"type": "function"}]}\n'},
            "a tool without function.name",
        ),
        ("toolcall_records", {"a.jsonl": "\n"}, "holds no samples"),
    ],
)
def test_readers_refuse_bad_datasets(tmp_path, reader, layout, needle):
    path = tmp_path / "ds"
    if layout is not None:
        path.mkdir()
        for name, text in layout.items():
            (path / name).write_text(text)
    with pytest.raises(formats.DatasetError) as err:
        getattr(formats, reader)(str(path))
    assert needle.format(p=path) in str(err.value)


def test_settings_are_not_mutated():
    settings = copy.deepcopy(SETTINGS)
    ev.eval_runs(settings)
    assert settings == SETTINGS


# The hub's parquet layouts need pyarrow: read in the eval venv, which has it.
PARQUET_LAYOUTS = """
import io, json, os, sys
sys.path.insert(0, sys.argv[1])
import pyarrow as pa, pyarrow.parquet as pq
from PIL import Image
from kimi_evals import formats
root = sys.argv[2]
png = io.BytesIO(); Image.new("RGB", (8, 8), "white").save(png, "PNG"); png = png.getvalue()
os.makedirs(root + "/ocr/data"); os.makedirs(root + "/mmmu/vision")
img = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
text = pa.string()
pq.write_table(pa.table(
    {"dataset": ["HME100k"], "question": ["Write it."],
     "question_type": ["Handwritten Mathematical Expression Recognition"],
     "answer": [["x+1"]], "image": [{"bytes": png, "path": None}]},
    schema=pa.schema([("dataset", text), ("question", text), ("question_type", text), ("answer", pa.list_(text)),
                      ("image", img)])), root + "/ocr/data/test-00000-of-00001.parquet")
pq.write_table(pa.table(
    {"id": ["test_Art_1"], "image": [{"bytes": png, "path": "a.png"}], "options": ["['red', 'blue', 'green']"],
     "answer": ["B"], "subject": ["Art"]},
    schema=pa.schema([("id", text), ("image", img), ("options", text), ("answer", text), ("subject", text)])),
    root + "/mmmu/vision/test-00000-of-00002.parquet")
out = {"ocr": formats.ocrbench_records(root + "/ocr"), "mmmu": formats.mmmu_pro_records(root + "/mmmu")}
for records in out.values():
    for r in records:
        r["image"] = [r["image"][0], r["image"][1] == png]
print(json.dumps(out, sort_keys=True))
"""


def test_the_hub_parquet_layouts_are_read(tmp_path):
    python = ROOT / ".venv" / "eval" / "bin" / "python"
    if not python.exists():
        skip_or_fail("no .venv/eval (tools/venvs.sh eval builds it)")
    proc = subprocess.run(
        [str(python), "-c", PARQUET_LAYOUTS, str(K3_EVALS.parent), str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
        env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {
        "ocr": [
            {
                "id": "0",
                "question": "Write it.",
                "answers": ["x+1"],
                "dataset": "HME100k",
                "type": "Handwritten Mathematical Expression Recognition",
                "image": ["bytes", True],
            }
        ],
        "mmmu": [
            {
                "id": "test_Art_1",
                "options": ["red", "blue", "green"],
                "answer": "B",
                "subject": "Art",
                "image": ["bytes", True],
            }
        ],
    }
