# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""What the benchmark runs against and from where: the endpoint, the served model, the tokenizer,
the max model length, the load-generator host and the sweep's top concurrency, from explicit
settings or the plan."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.benchmark._common import BenchmarkError, positive_int

# The target's keys and the variable that sets each.
_VARIABLES = (
    ("host", "benchmark_host"),
    ("url", "benchmark_endpoint"),
    ("model", "benchmark_served_model_name"),
    ("tokenizer", "benchmark_tokenizer"),
    ("max_model_len", "benchmark_max_model_len"),
)


@dataclass(frozen=True)
class TargetSettings:
    """The explicit settings (benchmark_host, benchmark_endpoint, benchmark_served_model_name,
    benchmark_tokenizer, benchmark_max_model_len, the sweep's top concurrency); empty or 0: the
    plan's."""

    host: str = ""
    endpoint: str = ""
    model: str = ""
    tokenizer: str = ""
    max_model_len: int = 0
    concurrency: int = 0


def target(plan=None, explicit=None):
    """What the benchmark runs against and from where: ``explicit`` settings (TargetSettings) first,
    else the plan's front door (its host generates the load), served model name, model path and max
    model length; the sweep's top concurrency is k3_concurrency (the P/D profiles), else
    max_num_seqs, else 8."""
    plan = plan if isinstance(plan, dict) else {}
    explicit = explicit or TargetSettings()
    params = plan.get("parameters") or {}
    front = plan.get("endpoint") or {}
    out = {
        "host": explicit.host or front.get("host") or "",
        "url": (explicit.endpoint or front.get("url") or "").rstrip("/"),
        "model": explicit.model
        or (plan.get("verify") or {}).get("served_model_name")
        or params.get("served_model_name")
        or "",
        "tokenizer": explicit.tokenizer or params.get("model_path") or "",
        "max_model_len": explicit.max_model_len or params.get("max_model_len") or 0,
        "concurrency": explicit.concurrency or params.get("concurrency") or params.get("max_num_seqs") or 8,
    }
    missing = [var for key, var in _VARIABLES if not out[key]]
    if missing:
        raise BenchmarkError(
            "the benchmark has no %s: %s. Fix: run it on an inventory the planner accepts (the plan's front door), "
            "or set %s" % (", ".join(missing), "no plan" if not plan else "the plan does not say", ", ".join(missing))
        )
    parts = urlsplit(out["url"])
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BenchmarkError("benchmark_endpoint must be an http(s) URL such as http://host:8000, not %r" % out["url"])
    out["max_model_len"] = positive_int("benchmark_max_model_len", out["max_model_len"])
    out["concurrency"] = positive_int("the sweep's top concurrency (k3_concurrency)", out["concurrency"])
    return out
