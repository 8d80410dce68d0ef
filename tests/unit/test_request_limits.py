"""The request limits of every vLLM API server: the guard middleware over a real ASGI exchange.

The guard (plugins/plugin_utils/data/k3_vllm_guard.py) is loaded as vLLM loads it and driven with
ASGI messages around an app that echoes the body it got; the sandbox's attacker suite sends the
same requests through the front door to the real engines and reads the count on their /metrics.
"""

from __future__ import annotations

import asyncio
import copy
import importlib.util
import json

import pytest
from conftest import EXAMPLES, ROOT, inventory_input

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._planner import PlanError, build_plan

GUARD = ROOT / "plugins" / "plugin_utils" / "data" / "k3_vllm_guard.py"
LIMITS = {"n": 4, "best_of": 4, "max_tokens": 64}


def guard(monkeypatch, limits=LIMITS, keys=""):
    monkeypatch.setenv("K3_REQUEST_LIMITS", json.dumps(limits))
    monkeypatch.setenv("K3_API_KEYS", keys)
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    spec = importlib.util.spec_from_file_location("k3_vllm_guard_under_test", GUARD)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    seen = []

    async def app(scope, receive, send):
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        seen.append(body)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    return module, module.KeyGuard(app), seen


def call(middleware, path, body, chunk=7, method="POST", key=None):
    """The middleware's answer (status, body) to ``body`` sent in chunks of ``chunk`` bytes."""
    parts = [body[i : i + chunk] for i in range(0, len(body), chunk)] or [b""]
    messages = [{"type": "http.request", "body": p, "more_body": i < len(parts) - 1} for i, p in enumerate(parts)]
    sent = []
    headers = [(b"authorization", b"Bearer " + key.encode())] if key else []

    async def receive():
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": method, "path": path, "headers": headers}
    asyncio.run(middleware(scope, receive, send))
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


def test_a_request_within_the_limits_reaches_vllm_unchanged(monkeypatch):
    _module, middleware, seen = guard(monkeypatch)
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "n" * 40}], "n": 4, "max_tokens": 64})
    assert call(middleware, "/v1/chat/completions", body.encode()) == (200, b"ok")
    assert seen == [body.encode()]
    # Not JSON, or another route: vLLM's own answer.
    assert call(middleware, "/v1/completions", b"{not json")[0] == 200
    assert call(middleware, "/tokenize", json.dumps({"n": 1000}).encode())[0] == 200
    assert len(seen) == 3


@pytest.mark.parametrize(
    ("field", "value", "limit"),
    [("n", 1000, 4), ("best_of", 5, 4), ("max_tokens", 65, 64), ("max_completion_tokens", 100000, 64)],
)
def test_over_a_limit_is_a_400_naming_the_field_and_the_limit(monkeypatch, field, value, limit):
    _module, middleware, seen = guard(monkeypatch)
    status, body = call(middleware, "/v1/completions", json.dumps({"prompt": "Hi", field: value}).encode())
    assert status == 400 and seen == []
    error = json.loads(body)["error"]
    assert error == {
        "message": "%s=%d is over this deployment's limit of %d" % (field, value, limit),
        "type": "invalid_request_error",
        "param": field,
        "code": "limit_exceeded",
    }


def test_the_key_is_checked_before_the_limits(monkeypatch):
    _module, middleware, seen = guard(monkeypatch, keys="sk-k3-a")
    assert call(middleware, "/v1/completions", json.dumps({"n": 1000}).encode())[0] == 401
    assert call(middleware, "/v1/completions", json.dumps({"n": 1000}).encode(), key="sk-k3-a")[0] == 400
    assert call(middleware, "/v1/completions", json.dumps({"n": 2}).encode(), key="sk-k3-a")[0] == 200
    assert len(seen) == 1


def test_no_limits_and_bad_values_hold_nothing(monkeypatch):
    module, middleware, _seen = guard(monkeypatch, limits={"n": "many", "best_of": 0, "max_tokens": True})
    assert middleware.limits == {}
    assert call(middleware, "/v1/completions", json.dumps({"n": 1000}).encode())[0] == 200
    assert module.over_limit(b"[1, 2]", LIMITS) is None


def test_the_limits_come_from_the_inventory_and_are_checked():
    inv = copy.deepcopy(inventory_input(str(EXAMPLES / "nvidia-tp8" / "hosts.yml")))  # (a shared, cached one)
    for data in inv["hostvars"].values():
        data.update(k3_request_max_n=2, k3_request_max_tokens=4096)
    assert build_plan(copy.deepcopy(inv))["auth"]["limits"] == {}  # no keys: no guard, the recipe's command
    for data in inv["hostvars"].values():
        data.update(k3_api_key="sk-k3-limits-a", k3_admin_api_key="sk-k3-limits-admin")
    plan = build_plan(inv)
    assert plan["auth"]["limits"] == {"n": 2, "best_of": 16, "max_tokens": 4096}
    engines = [s for d in plan["hosts"].values() for s in d["services"] if s["kind"] == "vllm" and s["serves_http"]]
    assert engines
    for svc in engines:
        assert json.loads(svc["env"]["K3_REQUEST_LIMITS"]) == plan["auth"]["limits"]
        assert svc["argv"][-2:] == ["--middleware", "k3_vllm_guard.KeyGuard"]
    for data in inv["hostvars"].values():
        data.update(k3_request_max_n=0)
    with pytest.raises(PlanError, match="k3_request_max_n"):
        build_plan(inv)
