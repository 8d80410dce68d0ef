# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The accuracy evaluation's runs, decided on the controller: the settings checked, and inspect's
command line and environment per benchmark (its scores and gates: _scores.py). Plain Python, no
Ansible import (the filters in plugins/plugin_utils/filters/_evaluate.py are thin shims over it).

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
