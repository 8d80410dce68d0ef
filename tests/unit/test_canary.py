"""An upgrade's roll (plugin_utils/operations/_canary.py: the canary first, the pause) and the canary's
gates (_canary_gates.py: the short benchmark's points, the benchmark's gates on them, the alert soak)."""

from __future__ import annotations

import io
import json

import pytest
from conftest import example_plan

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations import _canary as canary
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations import _canary_gates as gates
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations import _rolling as rolling

PLAN = example_plan("mi355x-pd-1p3d-c24")  # one prefill group, three decode groups


def everything(plan):
    """Every engine service of the plan, as staged files that all changed."""
    return {h: [s["name"] for s in d["services"] if s.get("kind") == "vllm"] for h, d in plan["hosts"].items()}


def ids(plan, role):
    return [g["id"] for g in rolling.replica_groups(plan) if g["role"] == role]


def test_the_canary_is_one_group_of_each_role_then_the_others_one_at_a_time():
    out = canary.upgrade_roll(PLAN, everything(PLAN))
    prefill, decodes = ids(PLAN, "prefill"), ids(PLAN, "decode")
    assert out["canary"] == [prefill[0], decodes[0]] or out["canary"] == [decodes[0], prefill[0]]
    assert out["batches"][0] == out["canary"] and [b for b in out["batches"][1:]] == [[d] for d in decodes[1:]]
    assert out["baseline"] == {"decode": decodes[1:]} and out["paused"] == []
    # The single prefill group is in the canary: that role stops, said before anything restarts.
    assert out["outages"][0].startswith("the canary takes every prefill group (%s)" % prefill[0])
    assert out["groups"][decodes[0]]["role"] == "decode" and out["groups"][decodes[0]]["url"].startswith("http")


def test_named_canary_groups_no_canary_and_a_pause():
    decodes = ids(PLAN, "decode")
    named = canary.upgrade_roll(PLAN, everything(PLAN), canary_groups=[decodes[2]])
    assert named["canary"] == [decodes[2]] and named["baseline"] == {"decode": decodes[:2]}
    with pytest.raises(rolling.RollingError, match="canary_groups: nowhere/x is not among the groups"):
        canary.upgrade_roll(PLAN, everything(PLAN), canary_groups=["nowhere/x"])
    none = canary.upgrade_roll(PLAN, everything(PLAN), canary=0, serial=2)
    assert none["canary"] == [] and none["baseline"] == {} and len(none["batches"]) == 2
    # pause_after counts groups and stops at a batch's end: the canary (2 groups) is never split.
    paused = canary.upgrade_roll(PLAN, everything(PLAN), pause_after=1)
    assert paused["batches"] == [paused["canary"]] and paused["paused"] == decodes[1:]
    three = canary.upgrade_roll(PLAN, everything(PLAN), pause_after=3)
    assert len(three["batches"]) == 2 and three["paused"] == decodes[2:]
    # A resumed run rolls what is left: only the groups whose files still differ (here one decode).
    host = next(
        h for h, d in PLAN["hosts"].items() if any(decodes[2] == "%s/%s" % (h, s["name"]) for s in d["services"])
    )
    resumed = canary.upgrade_roll(PLAN, {host: ["decode"]})
    assert resumed["batches"] == [[decodes[2]]] and resumed["baseline"] == {}
    for bad in ({"canary": -1}, {"pause_after": "2"}, {"canary": True}):
        with pytest.raises(rolling.RollingError, match="must be a whole number"):
            canary.upgrade_roll(PLAN, everything(PLAN), **bad)


def test_nothing_changed_rolls_nothing():
    assert canary.upgrade_roll(PLAN, {}) == {
        "canary": [],
        "batches": [],
        "paused": [],
        "baseline": {},
        "outages": [],
        "groups": {},
    }


def answer(ttft, itl, tokens):
    return {"ttft": ttft, "itls": [itl] * (tokens - 1), "e2el": ttft + itl * (tokens - 1), "tokens": tokens}


SETTINGS = {
    "model": "m",
    "key": "k",
    "ca_path": "",
    "max_tokens": 4,
    "timeout": 5,
    "requests": 5,
    "concurrency": 2,
    "warmup": 3,
}


def test_the_probe_warms_each_group_up_then_takes_turns_and_makes_a_point_per_role_and_side():
    sent = []

    def send(url, model, key, ca_path, max_tokens, timeout):
        sent.append(url)
        if "old" in url:
            return {"error": "%s: refused" % url}
        # The new engine's first answers are slow: the warm-up takes them, the probe never sees them.
        return answer(5.0 if sent.count(url) <= 3 else 0.1, 0.02, 4)

    canary, baseline = gates.paired_points(
        [{"role": "decode", "url": "http://new:1"}], [{"role": "decode", "url": "http://old:1"}], SETTINGS, send
    )
    # Warm-up (3 each), then rounds of 2, 2 and 1 per group: canary first, baseline first, canary first.
    assert sent == ["http://new:1"] * 3 + ["http://old:1"] * 3 + [
        "http://new:1",
        "http://new:1",
        "http://old:1",
        "http://old:1",
        "http://old:1",
        "http://old:1",
        "http://new:1",
        "http://new:1",
        "http://new:1",
        "http://old:1",
    ]
    decode = canary["decode"]
    assert decode["completed"] == 5 and decode["failed"] == 0
    assert decode["ttft_ms"]["p99"] == pytest.approx(100) and decode["itl_ms"]["p99"] == pytest.approx(20)
    assert decode["tpot_ms"]["mean"] == pytest.approx(20)
    old = baseline["decode"]
    assert old["completed"] == 0 and old["failed"] == 5 and old["errors"] == ["http://old:1: refused"] * 3


def test_no_warm_up_and_no_baseline():
    sent = []

    def send(url, *_args):
        sent.append(url)
        return answer(0.1, 0.02, 4)

    canary, baseline = gates.paired_points(
        [{"role": "prefill", "url": "http://p:1"}, {"role": "decode", "url": "http://d:1"}],
        [],
        dict(SETTINGS, warmup=0, requests=2),
        send,
    )
    assert sent == ["http://p:1"] * 2 + ["http://d:1"] * 2
    assert sorted(canary) == ["decode", "prefill"] and baseline == {}
    assert canary["prefill"]["completed"] == 2


THRESHOLDS = {"max_failed": 0, "max_regression_percent": 20, "regression_metrics": ["ttft_ms.p50", "itl_ms.p50"]}


def test_the_benchmarks_gates_judge_the_canary_against_the_release_before():
    old = gates.point("decode", [answer(0.1, 0.02, 8)] * 4, 1.0)
    same = gates.point("decode", [answer(0.11, 0.021, 8)] * 4, 1.0)
    slow = gates.point("decode", [answer(0.3, 0.02, 8)] * 4, 1.0)
    assert gates.judge({"decode": same}, {"decode": old}, THRESHOLDS) == []
    failures = gates.judge({"decode": slow}, {"decode": old}, THRESHOLDS)
    assert failures == [
        "benchmark gate failed: point decode: ttft_ms.p50 = 300.00 ms, 200.0% worse than the baseline's 100.00 ms, "
        "above the threshold of 20% regression (benchmark_max_regression_percent); run folder the canary; "
        "baseline the groups on the release before"
    ]
    # An absolute gate a CPU cannot meet, and a failed request.
    broken = gates.point("decode", [answer(0.1, 0.02, 8), {"error": "http://x: 500"}], 1.0)
    failures = gates.judge({"decode": broken}, {}, dict(THRESHOLDS, max_ttft_p99_ms=1))
    assert any("failed = 1, above the threshold 0" in f for f in failures)
    assert any("ttft_ms.p99 = 100.00 ms, above the threshold 1 ms" in f for f in failures)
    assert "canary decode: a request failed: http://x: 500" in failures
    lines = gates.side_by_side({"decode": slow}, {"decode": old})
    assert "decode ttft_ms.p50: canary 300.00 ms, release before 100.00 ms (200.0% worse)" in lines
    assert lines[0] == "decode completed: canary 4, release before 4"


def test_the_soak_fails_on_an_alert_for_a_canary_host_and_waits_out_the_rest():
    pages = [
        {"data": {"alerts": [{"state": "pending", "labels": {"alertname": "K3TTFTHigh", "k3_host": "d1"}}]}},
        {
            "data": {
                "alerts": [
                    {
                        "state": "firing",
                        "labels": {"alertname": "K3ServiceDown", "k3_host": "d1", "severity": "critical"},
                    },
                    {"state": "firing", "labels": {"alertname": "K3ServiceDown", "k3_host": "other"}},
                ]
            }
        },
    ]
    asked = []

    def opener(url, headers):
        asked.append((url, headers.get("Authorization")))
        return io.BytesIO(json.dumps(pages[min(len(asked), len(pages)) - 1]).encode())

    clock = iter(range(100))
    prometheus = {"url": "https://mon:9090/", "user": "kimi-k3", "password": "pw"}
    found = gates.soak(
        prometheus, {"d1"}, 30, interval=5, opener=opener, sleep=lambda s: None, clock=lambda: next(clock)
    )
    assert found == ["K3ServiceDown on d1 (critical)"]
    assert asked[0] == ("https://mon:9090/api/v1/alerts", "Basic a2ltaS1rMzpwdw==")
    quiet = gates.soak(prometheus, {"d9"}, 3, opener=opener, sleep=lambda s: None, clock=iter(range(100)).__next__)
    assert quiet == []
