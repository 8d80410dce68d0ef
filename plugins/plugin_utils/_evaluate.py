# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The accuracy evaluation, decided on the controller: inspect's command lines per benchmark from
the settings, the scores read from inspect's log headers, and the gates. Plain Python, no Ansible
import (the filters in plugins/filter/evaluate.py are thin shims over it).

The settings are the specification's (section 7): thinking mode, reasoning effort max,
temperature 1.0, top-p 1.0, one epoch, 16 connections, streaming, and per benchmark the max
output tokens OCRBench 8192, MMMU Pro 96000, ToolCall 32768. inspect reaches the endpoint through
its OpenAI-compatible provider ``openai-api/kimi/<served name>``: KIMI_BASE_URL and KIMI_API_KEY,
the toolkit's own variables, in the environment (a key is never an argument).
"""

from __future__ import annotations

import json
import math
from urllib.parse import urlsplit

# name -> title, inspect task, the specification's max output tokens
BENCHMARKS = {
    "ocrbench": {"title": "OCRBench", "task": "ocrbench", "max_tokens": 8192, "images": True},
    "mmmu_pro": {"title": "MMMU Pro", "task": "mmmu_pro", "max_tokens": 96000, "images": True},
    "toolcall": {"title": "ToolCall", "task": "toolcall", "max_tokens": 32768, "images": False},
}
EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
DEFAULTS = {
    "max_connections": 16,
    "temperature": 1.0,
    "top_p": 1.0,
    "epochs": 1,
    "reasoning_effort": "max",
    "stream": True,
    "thinking": True,
    "thinking_body": {"chat_template_kwargs": {"thinking": True}},
    "limit": None,
    "extra_args": [],
    "display": "plain",
}
PROVIDER = "kimi"  # openai-api/<provider>/<model>: inspect reads <PROVIDER>_BASE_URL and _API_KEY
PROXY_VARS = ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
# Arguments the collection sets itself: extra_args may not repeat them (nor pass a key).
OWNED_FLAGS = (
    "--model",
    "--model-base-url",
    "--max-tokens",
    "--max-connections",
    "--temperature",
    "--top-p",
    "--epochs",
    "--reasoning-effort",
    "--extra-body",
    "--log-dir",
    "--log-format",
    "-T",
    "-M",
    "--model-args",
    "--task-args",
    "--api-key",
)


class EvaluateError(ValueError):
    """A setting, log or result the evaluation cannot use; the message says which and why."""


# --------------------------------------------------------------------------------------------
# Settings
# --------------------------------------------------------------------------------------------
def _int(value, name, low=1):
    if isinstance(value, bool) or value is None:
        raise EvaluateError("%s must be a whole number >= %d, not %r" % (name, low, value))
    try:
        number = int(str(value).strip())
    except ValueError:
        raise EvaluateError("%s must be a whole number >= %d, not %r" % (name, low, value))
    if number < low:
        raise EvaluateError("%s must be a whole number >= %d, not %r" % (name, low, value))
    return number


def _number(value, name, low, high):
    if isinstance(value, bool) or value is None:
        raise EvaluateError("%s must be a number from %s to %s, not %r" % (name, low, high, value))
    try:
        number = float(str(value).strip())
    except ValueError:
        raise EvaluateError("%s must be a number from %s to %s, not %r" % (name, low, high, value))
    if math.isnan(number) or not low <= number <= high:
        raise EvaluateError("%s must be a number from %s to %s, not %r" % (name, low, high, value))
    return number


def _bool(value, name):
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "yes", "on", "1"):
        return True
    if text in ("false", "no", "off", "0"):
        return False
    raise EvaluateError("%s must be true or false, not %r" % (name, value))


def _text(value, name):
    if not isinstance(value, str) or not value.strip():
        raise EvaluateError("%s must be a non-empty text, not %r" % (name, value))
    return value.strip()


def benchmark_names(value):
    """The benchmarks to run, in the given order; refuses unknown or repeated names."""
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, (list, tuple)) or not value:
        raise EvaluateError(
            "evaluate_benchmarks must be a non-empty list of %s, not %r" % (", ".join(BENCHMARKS), value)
        )
    out = []
    for name in value:
        if name not in BENCHMARKS:
            raise EvaluateError(
                "unknown benchmark %r in evaluate_benchmarks: known are %s" % (name, ", ".join(BENCHMARKS))
            )
        if name in out:
            raise EvaluateError("benchmark %r is listed twice in evaluate_benchmarks" % name)
        out.append(name)
    return out


def _per_benchmark(value, name, selected):
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise EvaluateError("%s must be a mapping of benchmark to value, not %r" % (name, value))
    unknown = sorted(set(value) - set(BENCHMARKS))
    if unknown:
        raise EvaluateError("%s names unknown benchmarks %s: known are %s" % (name, unknown, ", ".join(BENCHMARKS)))
    return {k: v for k, v in value.items() if k in selected}


def max_tokens(overrides, selected):
    """Max output tokens per selected benchmark: the specification's, overridden per benchmark."""
    out = {name: BENCHMARKS[name]["max_tokens"] for name in selected}
    for name, value in _per_benchmark(overrides, "evaluate_max_tokens", selected).items():
        out[name] = _int(value, "evaluate_max_tokens.%s" % name)
    return out


def endpoint_base_url(endpoint):
    """The OpenAI base URL (…/v1) of an endpoint given as scheme://host:port (a trailing /v1 is kept)."""
    endpoint = _text(endpoint, "evaluate_endpoint")
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EvaluateError("evaluate_endpoint must be an http(s) URL such as http://10.0.0.1:8000, not %r" % endpoint)
    base = endpoint.rstrip("/")
    return base if base.endswith("/v1") else base + "/v1"


def environment(endpoint, log_dir=None, tls_ca=None):
    """The evaluation's environment, without the key (the caller adds KIMI_API_KEY): the base URL,
    proxies emptied and NO_PROXY naming the endpoint's host, as the specification exports them."""
    base = endpoint_base_url(endpoint)
    host = urlsplit(base).hostname
    no_proxy = ",".join(dict.fromkeys(["localhost", "127.0.0.1", host]))
    env = {"KIMI_BASE_URL": base, "no_proxy": no_proxy, "NO_PROXY": no_proxy}
    env.update(dict.fromkeys(PROXY_VARS, ""))
    if log_dir:
        env["INSPECT_LOG_DIR"] = log_dir
    if tls_ca:
        env["SSL_CERT_FILE"] = tls_ca  # the CA the endpoint's certificate is checked against
    return env


def _extra_args(value):
    if value is None:
        return []
    if not isinstance(value, (list, tuple)) or not all(isinstance(a, (str, int, float)) for a in value):
        raise EvaluateError("evaluate_extra_args must be a list of inspect eval arguments, not %r" % (value,))
    args = [str(a) for a in value]
    for arg in args:
        flag = arg.split("=", 1)[0]
        if flag in OWNED_FLAGS:
            raise EvaluateError(
                "evaluate_extra_args may not set %s: the collection sets it (use the evaluate_* variable)" % flag
            )
        if "api_key" in arg.lower() or "api-key" in arg.lower():
            raise EvaluateError("evaluate_extra_args may not carry an API key: keys go through the environment only")
    return args


def eval_runs(settings):
    """Validate the settings and return what to run.

    settings: benchmarks, datasets ({benchmark: path on the evaluation host}), model (the served
    name), inspect (the inspect program), tasks (the tasks.py file), log_dir (the run folder on the
    evaluation host), and optionally max_tokens ({benchmark: n}), max_connections, temperature,
    top_p, epochs, reasoning_effort, stream, thinking, thinking_body, limit, extra_args, display.

    For the service check: python (default: next to inspect), check_max_tokens, check_reasoning, timeout.

    Returns {"runs": [{"benchmark", "title", "log_dir", "argv"}], "max_tokens": {...}, "images": bool,
    "extra_body": {...}, "service_check": argv}.
    """
    if not isinstance(settings, dict):
        raise EvaluateError("the evaluation settings must be a mapping, not %r" % (settings,))
    conf = dict(DEFAULTS, **{k: v for k, v in settings.items() if v is not None or k == "limit"})
    selected = benchmark_names(conf.get("benchmarks"))
    datasets = _per_benchmark(conf.get("datasets"), "evaluate_datasets", selected)
    missing = [name for name in selected if not datasets.get(name)]
    if missing:
        raise EvaluateError(
            "evaluate_datasets has no local path for %s: set evaluate_datasets.%s to the dataset's folder or file "
            "on the evaluation host (nothing is downloaded)" % (", ".join(missing), missing[0])
        )
    model = _text(conf.get("model"), "the served model name (evaluate_served_model_name)")
    inspect = _text(conf.get("inspect"), "evaluate_inspect")
    tasks = _text(conf.get("tasks"), "the tasks file")
    log_dir = _text(conf.get("log_dir"), "the run's log folder").rstrip("/")
    tokens = max_tokens(conf.get("max_tokens"), selected)
    connections = _int(conf["max_connections"], "evaluate_max_connections")
    temperature = _number(conf["temperature"], "evaluate_temperature", 0, 2)
    top_p = _number(conf["top_p"], "evaluate_top_p", 0, 1)
    if top_p == 0:
        raise EvaluateError("evaluate_top_p must be above 0, not %r" % conf["top_p"])
    epochs = _int(conf["epochs"], "evaluate_epochs")
    effort = conf["reasoning_effort"]
    if effort not in EFFORTS:
        raise EvaluateError("evaluate_reasoning_effort must be one of %s, not %r" % (", ".join(EFFORTS), effort))
    stream = _bool(conf["stream"], "evaluate_stream")
    thinking = _bool(conf["thinking"], "evaluate_thinking")
    body = conf["thinking_body"] or {}
    if not isinstance(body, dict):
        raise EvaluateError("evaluate_thinking_body must be a mapping of request fields, not %r" % (body,))
    limit = None if conf["limit"] in (None, "") else _int(conf["limit"], "evaluate_limit")
    extra = _extra_args(conf["extra_args"])
    display = _text(conf["display"], "the display")
    runs = []
    for name in selected:
        bench = BENCHMARKS[name]
        folder = "%s/%s" % (log_dir, name)
        argv = [
            inspect,
            "eval",
            "%s@%s" % (tasks, bench["task"]),
            "--model",
            "openai-api/%s/%s" % (PROVIDER, model),
            "-T",
            "dataset=%s" % _text(datasets[name], "evaluate_datasets.%s" % name),
            "--max-tokens",
            str(tokens[name]),
            "--max-connections",
            str(connections),
            "--temperature",
            repr(temperature),
            "--top-p",
            repr(top_p),
            "--epochs",
            str(epochs),
            "--reasoning-effort",
            effort,
            "-M",
            "stream=%s" % ("true" if stream else "false"),
        ]
        if thinking and body:
            argv += ["--extra-body", json.dumps(body, sort_keys=True)]
        if limit is not None:
            argv += ["--limit", str(limit)]
        argv += ["--log-dir", folder, "--display", display] + extra
        runs.append({"benchmark": name, "title": bench["title"], "log_dir": folder, "argv": argv})
    images = any(BENCHMARKS[n]["images"] for n in selected)
    extra_body = body if thinking else {}
    check = [
        _text(conf.get("python") or inspect.rsplit("/", 1)[0] + "/python", "evaluate_python"),
        tasks.rsplit("/", 1)[0] + "/service_check.py" if "/" in tasks else "service_check.py",
        "--model",
        model,
        "--max-tokens",
        str(_int(conf.get("check_max_tokens", 16), "evaluate_check_max_tokens")),
        "--benchmark-max-tokens",
        ",".join("%s=%d" % item for item in tokens.items()),
        "--extra-body",
        json.dumps(extra_body, sort_keys=True),
        "--timeout",
        str(_int(conf.get("timeout", 600), "evaluate_request_timeout")),
    ]
    check += ["--image"] if images else []
    check += ["--require-reasoning"] if _bool(conf.get("check_reasoning", True), "evaluate_check_reasoning") else []
    return {"runs": runs, "max_tokens": tokens, "images": images, "extra_body": extra_body, "service_check": check}


def retry_argv(inspect, log_file, max_connections=16):
    """``inspect eval-retry`` of a run that did not finish (its log file), in its own log folder."""
    inspect = _text(inspect, "evaluate_inspect")
    log_file = _text(log_file, "the log file to retry")
    folder = log_file.rsplit("/", 1)[0] if "/" in log_file else "."
    return [
        inspect,
        "eval-retry",
        log_file,
        "--log-dir",
        folder,
        "--max-connections",
        str(_int(max_connections, "evaluate_max_connections")),
    ]


# --------------------------------------------------------------------------------------------
# Scores
# --------------------------------------------------------------------------------------------
def _header(value, where):
    if isinstance(value, (str, bytes)):
        try:
            value = json.loads(value)
        except ValueError as err:
            raise EvaluateError("%s is not an inspect log header (not JSON: %s)" % (where, err))
    if not isinstance(value, dict) or "eval" not in value or "status" not in value:
        raise EvaluateError("%s is not an inspect log header (no eval or status)" % where)
    return value


def score_of(benchmark, header, log=None):
    """One benchmark's result from its log header (``inspect log dump --header-only``, or a JSON log):
    {benchmark, title, status, accuracy, stderr, scorer, samples, completed, log, error}."""
    if benchmark not in BENCHMARKS:
        raise EvaluateError("unknown benchmark %r: known are %s" % (benchmark, ", ".join(BENCHMARKS)))
    where = "the %s log %s" % (BENCHMARKS[benchmark]["title"], log or "")
    header = _header(header, where.strip())
    task = str(header["eval"].get("task", ""))
    if task.replace("-", "_").rsplit("/", maxsplit=1)[-1] != BENCHMARKS[benchmark]["task"]:
        raise EvaluateError("%s is the log of task %r, not %s" % (where.strip(), task, BENCHMARKS[benchmark]["task"]))
    results = header.get("results") or {}
    out = {
        "benchmark": benchmark,
        "title": BENCHMARKS[benchmark]["title"],
        "status": header["status"],
        "accuracy": None,
        "stderr": None,
        "scorer": None,
        "samples": int(results.get("total_samples") or 0),
        "completed": int(results.get("completed_samples") or 0),
        "log": log,
        "error": ((header.get("error") or {}).get("message") or "")[:500] or None,
    }
    for score in results.get("scores") or []:
        metrics = score.get("metrics") or {}
        if "accuracy" in metrics:
            out["accuracy"] = float(metrics["accuracy"]["value"])
            out["stderr"] = float((metrics.get("stderr") or {}).get("value") or 0.0)
            out["scorer"] = score.get("name")
            break
    if out["status"] == "success" and out["accuracy"] is None:
        raise EvaluateError("%s finished but holds no accuracy score" % where.strip())
    return out


def newest_logs(found, runs_results=None):
    """The newest log of each benchmark: found = the registered results of an ansible.builtin.find
    per run (each with item = the run, files = [{path, mtime}]). A benchmark without a log is an
    error naming it, its folder and, from runs_results (the registered inspect runs), inspect's end."""
    if isinstance(found, dict):
        found = found.get("results")
    if not isinstance(found, (list, tuple)):
        raise EvaluateError("newest_logs needs the registered results of a find per benchmark, not %r" % (found,))
    ends = {}
    for result in (runs_results or {}).get("results", []) if isinstance(runs_results, dict) else runs_results or []:
        run = result.get("item") or {}
        # The last line of inspect's output: the exception that ended it (a traceback's end).
        lines = [
            line.strip() for line in (result.get("stderr") or result.get("msg") or "").splitlines() if line.strip()
        ]
        ends[run.get("benchmark")] = "inspect exited %s: %s" % (result.get("rc"), lines[-1] if lines else "no output")
    out, missing = [], []
    for result in found:
        run = result.get("item") or {}
        logs = [f for f in result.get("files") or [] if str(f.get("path", "")).endswith((".eval", ".json"))]
        if not logs:
            missing.append(
                "%s wrote no log in %s%s"
                % (
                    run.get("title", run.get("benchmark")),
                    run.get("log_dir"),
                    ": " + ends[run.get("benchmark")] if run.get("benchmark") in ends else "",
                )
            )
            continue
        newest = max(logs, key=lambda f: (float(f.get("mtime") or 0), f["path"]))
        out.append({"benchmark": run.get("benchmark"), "title": run.get("title"), "log": newest["path"]})
    if missing:
        raise EvaluateError("; ".join(missing))
    return out


def read_scores(logs):
    """logs: [{benchmark, header, log}] (the header as dumped, text or mapping), or the registered
    results of a ``inspect log dump --header-only`` loop over newest_logs -> their results."""
    if isinstance(logs, dict) and "results" in logs:
        logs = logs["results"]
    if not isinstance(logs, (list, tuple)):
        raise EvaluateError("the logs must be a list of {benchmark, header, log}, not %r" % (logs,))
    out = []
    for item in logs:
        if not isinstance(item, dict):
            raise EvaluateError("a log entry must be a mapping, not %r" % (item,))
        if "header" not in item and "stdout" in item:
            item = {
                "benchmark": (item.get("item") or {}).get("benchmark"),
                "header": item["stdout"],
                "log": (item.get("item") or {}).get("log"),
            }
        out.append(score_of(item.get("benchmark"), item.get("header"), item.get("log")))
    return out


def kept_logs(scores, run_dir):
    """The results with kept = the log's copy in the run folder (run_dir/<benchmark>/<file>)."""
    return [
        dict(
            result,
            kept="%s/%s/%s" % (str(run_dir).rstrip("/"), result["benchmark"], str(result["log"]).rsplit("/", 1)[-1]),
        )
        for result in scores
    ]


def unfinished(scores):
    """The results whose run did not finish (for inspect eval-retry)."""
    return [result for result in scores if result["status"] != "success"]


# --------------------------------------------------------------------------------------------
# Gates
# --------------------------------------------------------------------------------------------
def gate_thresholds(gates, selected=None):
    """{benchmark: minimum accuracy (0 to 1)}; a benchmark without one is reported, not gated."""
    gates = gates or {}
    if not isinstance(gates, dict):
        raise EvaluateError("evaluate_gates must be a mapping of benchmark to minimum accuracy, not %r" % (gates,))
    out = {}
    for name, value in gates.items():
        if name not in BENCHMARKS:
            raise EvaluateError(
                "evaluate_gates names unknown benchmark %r: known are %s" % (name, ", ".join(BENCHMARKS))
            )
        if value is None:
            continue
        out[name] = _number(value, "evaluate_gates.%s (an accuracy)" % name, 0, 1)
    if selected is not None:
        out = {k: v for k, v in out.items() if k in selected}
    return out


def gate_failures(scores, gates, run_dir, host="localhost"):
    """A message per benchmark that failed: a run that did not finish, or an accuracy under its gate.
    Each names the benchmark, its score, the threshold and the log folder (the one on the controller;
    eval-retry runs where inspect wrote the log: on host)."""
    thresholds = gate_thresholds(gates)
    failures = []
    for score in scores:
        name, title = score["benchmark"], score["title"]
        folder = "%s/%s" % (str(run_dir).rstrip("/"), name)
        if score["status"] != "success":
            failures.append(
                "%s did not finish (status %s, %d of %d samples%s); logs in %s; resume it%s with "
                "`inspect eval-retry %s`"
                % (
                    title,
                    score["status"],
                    score["completed"],
                    score["samples"],
                    ": %s" % score["error"] if score["error"] else "",
                    folder,
                    "" if host in ("localhost", "127.0.0.1", None) else " on %s" % host,
                    score["log"] or folder,
                )
            )
            continue
        threshold = thresholds.get(name)
        if threshold is not None and score["accuracy"] < threshold:
            failures.append(
                "%s scored %.4f, below its gate %.4f (evaluate_gates.%s); logs in %s (inspect view start --log-dir %s)"
                % (title, score["accuracy"], threshold, name, folder, folder)
            )
    return failures


def score_table(scores, gates=None):
    """The scores as text lines: benchmark, accuracy ± stderr, samples, gate and verdict."""
    thresholds = gate_thresholds(gates)
    rows = [("benchmark", "accuracy", "stderr", "samples", "gate", "result")]
    for result in scores:
        gate = thresholds.get(result["benchmark"])
        if result["status"] != "success":
            verdict = "NOT FINISHED (%s)" % result["status"]
        elif gate is None:
            verdict = "reported"
        else:
            verdict = "pass" if result["accuracy"] >= gate else "FAIL"
        rows.append(
            (
                result["title"],
                "-" if result["accuracy"] is None else "%.4f" % result["accuracy"],
                "-" if result["stderr"] is None else "%.4f" % result["stderr"],
                "%d/%d" % (result["completed"], result["samples"]),
                "-" if gate is None else "%.4f" % gate,
                verdict,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def service_failures(result):
    """The failed checks of service_check.py's JSON answer, one message each."""
    if isinstance(result, (str, bytes)):
        try:
            result = json.loads(result)
        except ValueError as err:
            raise EvaluateError("the service check did not answer JSON: %s" % err)
    if not isinstance(result, dict) or not isinstance(result.get("checks"), list) or not result["checks"]:
        raise EvaluateError("the service check answered no checks: %r" % (result,))
    base = result.get("base_url", "the endpoint")
    return [
        "%s: %s check failed: %s" % (base, item["check"], item["detail"])
        for item in result["checks"]
        if not item.get("ok")
    ]
