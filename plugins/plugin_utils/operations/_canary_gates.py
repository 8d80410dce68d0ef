# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The canary's gates: a short benchmark of the canary against the groups still on the release
before, and no firing alert for the canary's hosts for a soak time.

The short benchmark sends the same streamed completions (``ignore_eos``, so every answer is
``max_tokens`` long) to each canary group and to each baseline group of its role, straight to the
engines, and measures them as the benchmark playbook does (TTFT, ITL and end-to-end latency per
request, output throughput over the probe), into points of the benchmark's normalised shape. The
benchmark's own gates judge them (benchmark/_gates.py): failed requests, an absolute TTFT or
throughput, and a regression in percent against the baseline's point of the same role.
"""

from __future__ import annotations

import base64
import json
import math
import time
from concurrent.futures import ThreadPoolExecutor

from ansible.module_utils.urls import open_url

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.benchmark._common import METRICS, fmt
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.benchmark._gates import (
    Thresholds,
    apply_gates,
    change_percent,
    gate_list,
)

PROMPT = "Kimi-K3 canary check: count from one to one hundred, in words, one number a line."
# The metrics printed side by side, the canary's and the baseline's.
SHOWN = ("completed", "failed", "ttft_ms.p50", "ttft_ms.p99", "itl_ms.p50", "e2el_ms.p50", "output_throughput")


def _percentiles(values):
    """mean, p50, p90, p99 (nearest rank) in milliseconds of ``values`` in seconds; {} for none."""
    if not values:
        return {}
    ordered = sorted(v * 1000.0 for v in values)

    def rank(p):
        return ordered[max(0, math.ceil(p / 100.0 * len(ordered)) - 1)]

    return {"mean": sum(ordered) / len(ordered), "p50": rank(50), "p90": rank(90), "p99": rank(99)}


def one_request(url, model, key, ca_path, max_tokens, timeout):
    """One streamed completion: ``{ttft, itls, e2el, tokens}`` in seconds, or ``{error}``."""
    body = {
        "model": model,
        "prompt": PROMPT,
        "max_tokens": max_tokens,
        "temperature": 0,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = "Bearer " + key
    started = time.monotonic()
    stamps, tokens = [], None
    try:
        with open_url(
            url.rstrip("/") + "/v1/completions",
            data=json.dumps(body),
            headers=headers,
            method="POST",
            timeout=timeout,
            ca_path=ca_path or None,
        ) as answer:
            for raw in answer:
                line = raw.decode("utf-8", "replace").strip()
                if not line.startswith("data:") or line == "data: [DONE]":
                    continue
                chunk = json.loads(line[5:])
                if chunk.get("usage"):
                    tokens = chunk["usage"].get("completion_tokens")
                if any(choice.get("text") for choice in chunk.get("choices") or []):
                    stamps.append(time.monotonic())
    except (OSError, ValueError) as exc:
        return {"error": "%s: %s" % (url, exc)}
    if not stamps:
        return {"error": "%s: the answer streamed no token" % url}
    return {
        "ttft": stamps[0] - started,
        "itls": [b - a for a, b in zip(stamps, stamps[1:], strict=False)],
        "e2el": stamps[-1] - started,
        "tokens": tokens if tokens is not None else len(stamps),
    }


def _send_all(url, count, settings, send):
    """``count`` completions to ``url``, ``settings['concurrency']`` at a time: ``(results, seconds)``."""
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, settings["concurrency"])) as pool:
        results = list(
            pool.map(
                lambda _n: send(
                    url,
                    settings["model"],
                    settings["key"],
                    settings["ca_path"],
                    settings["max_tokens"],
                    settings["timeout"],
                ),
                range(count),
            )
        )
    return results, time.monotonic() - started


def paired_points(canary, baseline, settings, send=one_request):
    """``(canary points, baseline points)``, role to point, measured side by side.

    First ``settings['warmup']`` completions to every group's engine, not measured: an engine's first
    requests after its start pay for what it has not warmed up yet (a restarted canary's most of all).
    Then the probe in rounds of ``concurrency`` completions per group, the canary's and the baseline's
    groups taking turns (canary first, then baseline first, and so on), so that whatever else the
    hosts do during the probe weighs on both sides alike; ``requests`` completions per group in all."""
    groups = [("canary", g) for g in canary] + [("baseline", g) for g in baseline]
    for _side, group in groups:
        if settings.get("warmup"):
            _send_all(group["url"], settings["warmup"], settings, send)
    per_round = max(1, settings["concurrency"])
    rounds = math.ceil(settings["requests"] / per_round)
    taken = {}  # (side, role) -> [results, seconds]
    for n in range(rounds):
        count = min(per_round, settings["requests"] - n * per_round)
        for side, group in groups if n % 2 == 0 else groups[::-1]:
            got, took = _send_all(group["url"], count, settings, send)
            entry = taken.setdefault((side, group["role"]), [[], 0.0])
            entry[0] += got
            entry[1] += took
    out = {"canary": {}, "baseline": {}}
    for (side, role), (results, seconds) in taken.items():
        out[side][role] = point(role, results, seconds)
    return out["canary"], out["baseline"]


def point(name, results, duration):
    """The benchmark's normalised point of the probe's ``results``."""
    good = [r for r in results if "error" not in r]
    tokens = sum(r["tokens"] for r in good)
    return {
        "name": name,
        "scenario": "canary",
        "completed": len(good),
        "failed": len(results) - len(good),
        "duration_s": duration,
        "request_throughput": len(good) / duration if duration else None,
        "output_throughput": tokens / duration if duration else None,
        "ttft_ms": _percentiles([r["ttft"] for r in good]),
        "itl_ms": _percentiles([i for r in good for i in r["itls"]]),
        "e2el_ms": _percentiles([r["e2el"] for r in good]),
        "tpot_ms": _percentiles([(r["e2el"] - r["ttft"]) / (r["tokens"] - 1) for r in good if r["tokens"] > 1]),
        "errors": [r["error"] for r in results if "error" in r][:3],
    }


def judge(canary, baseline, thresholds, extra=()):
    """The failures of the canary's points (role to point) against the baseline's (role to point),
    one sentence each; [] when every gate passes."""
    gates = gate_list(Thresholds(**thresholds), extra)
    points = [dict(p, name=role) for role, p in canary.items()]
    failures = apply_gates(
        points,
        gates,
        "the canary",
        baseline={r: dict(p, name=r) for r, p in baseline.items()},
        baseline_dir="the groups on the release before",
    )
    for role, p in canary.items():
        for error in p.get("errors") or []:
            failures.append("canary %s: a request failed: %s" % (role, error))
    return failures


def side_by_side(canary, baseline):
    """Lines with the canary's figures beside the baseline's, per role and metric."""
    lines = []
    for role, p in canary.items():
        base = baseline.get(role)
        for name in SHOWN:
            unit = METRICS[name][1]
            text = "%s %s: canary %s" % (role, name, fmt(_metric(p, name), unit))
            if base:
                old = _metric(base, name)
                text += ", release before %s" % fmt(old, unit)
                change = change_percent(name, _metric(p, name), old)
                if change is not None and abs(change) >= 0.05:
                    text += " (%.1f%% %s)" % (abs(change), "worse" if change > 0 else "better")
            lines.append(text)
    return lines


def _metric(p, name):
    if "." in name:
        lat, pct = name.split(".")
        return (p.get(lat) or {}).get(pct)
    return p.get(name)


def firing(prometheus, hosts, opener=None):
    """The alerts firing for ``hosts`` (their ``k3_host`` label), each ``name on host (severity)``.

    ``prometheus``: ``{url, user, password, ca_path}``; raises OSError/ValueError when it does not answer."""
    url = prometheus["url"].rstrip("/") + "/api/v1/alerts"
    headers = {}
    if prometheus.get("password"):
        token = base64.b64encode(("%s:%s" % (prometheus.get("user") or "", prometheus["password"])).encode()).decode()
        headers["Authorization"] = "Basic " + token
    fetch = opener or (lambda u, h: open_url(u, headers=h, timeout=10, ca_path=prometheus.get("ca_path") or None))
    with fetch(url, headers) as answer:
        data = json.loads(answer.read().decode("utf-8"))
    out = []
    for alert in (data.get("data") or {}).get("alerts") or []:
        labels = alert.get("labels") or {}
        if alert.get("state") == "firing" and labels.get("k3_host") in hosts:
            out.append(
                "%s on %s (%s)"
                % (labels.get("alertname", "?"), labels["k3_host"], labels.get("severity", "no severity"))
            )
    return sorted(set(out))


def soak(prometheus, hosts, seconds, *, interval=5, opener=None, sleep=time.sleep, clock=time.monotonic):
    """Watch the alerts of ``hosts`` for ``seconds``: the first firing ones found (a list), else []."""
    end = clock() + seconds
    while True:
        found = firing(prometheus, hosts, opener)
        if found or clock() >= end:
            return found
        sleep(min(interval, max(0.0, end - clock())))
