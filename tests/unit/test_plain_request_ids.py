"""No internal address in an answer's id: the guard middleware's plain ids on a P/D decode engine.

vllm-router sends the decode engine ``X-Request-Id: ___prefill_addr_<a>___decode_addr_<b>_<uuid>``
and vLLM answers ``"id": "chatcmpl-<that id>"`` in the whole answer and in every streamed event.
The guard (plugins/plugin_utils/data/k3_vllm_guard.py) is loaded as vLLM loads it, around an app
that answers the way vLLM does; the sandbox's attacker suite reads the ids through the front door.
"""

from __future__ import annotations

import asyncio
import copy
import importlib.util
import json

from conftest import EXAMPLES, ROOT, inventory_input

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._planner import build_plan

GUARD = ROOT / "plugins" / "plugin_utils" / "data" / "k3_vllm_guard.py"
PEER_ID = b"___prefill_addr_10.77.0.14:8100___decode_addr_10.77.0.15:8200_f2fd52042de2474facf3375be4735e3b"


def guard(monkeypatch, plain="1"):
    monkeypatch.setenv("K3_REQUEST_LIMITS", json.dumps({"n": 4}))
    monkeypatch.setenv("K3_PLAIN_REQUEST_IDS", plain)
    monkeypatch.delenv("K3_API_KEYS", raising=False)
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    spec = importlib.util.spec_from_file_location("k3_vllm_guard_ids", GUARD)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    async def app(scope, receive, send):
        """vLLM's answer: the request's id in the body, whole (with its length) or streamed."""
        request = json.loads((await receive())["body"])
        rid = dict(scope["headers"]).get(b"x-request-id", b"abc")
        event = b'{"id":"chatcmpl-%s","object":"chat.completion"}' % rid
        if request.get("stream"):
            await send(
                {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]}
            )
            for _ in range(3):
                await send({"type": "http.response.body", "body": b"data: " + event + b"\n\n", "more_body": True})
            await send({"type": "http.response.body", "body": b"data: [DONE]\n\n", "more_body": False})
            return
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(event)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": event})

    return module.KeyGuard(app)


def call(middleware, body, request_id=PEER_ID, path="/v1/chat/completions"):
    sent = []
    headers = [(b"x-request-id", request_id)] if request_id else []

    async def receive():
        return {"type": "http.request", "body": json.dumps(body).encode(), "more_body": False}

    async def send(message):
        sent.append(message)

    asyncio.run(middleware({"type": "http", "method": "POST", "path": path, "headers": headers}, receive, send))
    start, bodies = sent[0], [m["body"] for m in sent[1:]]
    return dict(start["headers"]), bodies


def test_a_whole_answer_carries_the_uuid_only_with_its_new_length(monkeypatch):
    headers, bodies = call(guard(monkeypatch), {"model": "m"})
    answer = json.loads(b"".join(bodies))
    assert answer["id"] == "chatcmpl-f2fd52042de2474facf3375be4735e3b"
    assert int(headers[b"content-length"]) == len(b"".join(bodies))


def test_every_streamed_event_carries_the_uuid_only(monkeypatch):
    headers, bodies = call(guard(monkeypatch), {"model": "m", "stream": True})
    assert b"content-length" not in headers and len(bodies) == 4
    for event in bodies[:3]:
        assert json.loads(event[len(b"data: ") :])["id"] == "chatcmpl-f2fd52042de2474facf3375be4735e3b"
    assert all(b"10.77.0" not in event for event in bodies)


def test_other_ids_other_routes_and_engines_without_the_switch_are_left_alone(monkeypatch):
    own = b"chatcmpl-client-chosen_id_1"
    assert json.loads(b"".join(call(guard(monkeypatch), {}, request_id=own)[1]))["id"] == "chatcmpl-" + own.decode()
    assert json.loads(b"".join(call(guard(monkeypatch), {}, path="/tokenize")[1]))["id"].endswith(PEER_ID.decode())
    # A prefill engine (no switch): its answer goes to the router only, as vLLM gives it.
    assert json.loads(b"".join(call(guard(monkeypatch, plain=""), {})[1]))["id"].endswith(PEER_ID.decode())


def test_the_planner_sets_the_switch_on_the_guarded_decode_engines_only():
    inv = copy.deepcopy(inventory_input(str(EXAMPLES / "nvidia-pd-nixl" / "hosts.yml")))  # (a shared, cached one)
    assert all(
        "K3_PLAIN_REQUEST_IDS" not in s["env"]
        for d in build_plan(copy.deepcopy(inv))["hosts"].values()
        for s in d["services"]
    )  # no keys: no guard, the recipe's command
    for data in inv["hostvars"].values():
        data.update(k3_api_key="sk-k3-ids-a", k3_admin_api_key="sk-k3-ids-admin")
    services = [s for d in build_plan(inv)["hosts"].values() for s in d["services"] if s["kind"] == "vllm"]
    switched = {s["role"] for s in services if s["env"].get("K3_PLAIN_REQUEST_IDS") == "1"}
    assert switched == {"decode"} and {"prefill", "decode"} <= {s["role"] for s in services}
