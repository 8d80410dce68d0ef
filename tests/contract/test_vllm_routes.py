# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Contract: no route of the pinned vLLM runs for a caller without the key, behind the collection's guard.

The route list is read from vLLM itself (its FastAPI app, built by vLLM's own ``build_app`` with
every route-adding option on: tests/contract/vllm_routes.py), not from a hand list: a route that a
new vLLM pin adds is called here the day the pin moves. vLLM's own check covers only /v1, /v2,
/inference and /cohere; the guard (plugins/plugin_utils/data/k3_vllm_guard.py, started with
--middleware) must answer 401 on every other route too, let a caller with the key through, and
leave open only the read-only GET /health and GET /metrics.
"""

from __future__ import annotations

import importlib.util

from conftest import ROOT, vllm_routes

KEY = "sk-k3-contract-7f3e9a"
GUARD = ROOT / "plugins" / "plugin_utils" / "data" / "k3_vllm_guard.py"


def guard_module():
    spec = importlib.util.spec_from_file_location("k3_vllm_guard", GUARD)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_route_list_comes_from_vllm_and_holds_the_unguarded_ones():
    paths = {(r["methods"], r["path"]) for r in vllm_routes(KEY)}
    # The routes vLLM's own key check does not cover, found open on a sandbox engine.
    for route in (("POST", "/invocations"), ("POST", "/scale_elastic_ep"), ("POST", "/tokenize")):
        assert route in paths, sorted(paths)
    assert ("POST", "/v1/chat/completions") in paths and ("GET", "/v1/realtime") in paths
    assert len(paths) > 50


def test_every_route_but_health_and_metrics_refuses_a_caller_without_the_key():
    open_routes = guard_module().OPEN_ROUTES
    let_through = []
    for route in vllm_routes(KEY):
        if (route["methods"], route["path"]) in open_routes:
            continue
        refused = "closed" if route["kind"] == "websocket" else 401
        if route["none"] != refused or route["wrong"] != refused:
            let_through.append(route)
    assert let_through == []


def test_the_key_gets_through_the_guard_on_every_route():
    # vLLM answers for itself (400 for an empty body, 500 without an engine): not the guard's 401.
    refused = [r for r in vllm_routes(KEY) if r["key"] in (401, "closed")]
    assert refused == []


def test_the_open_routes_are_read_only_routes_vllm_has():
    routes = vllm_routes(KEY)
    open_routes = guard_module().OPEN_ROUTES
    assert open_routes == {("GET", "/health"), ("GET", "/metrics")}
    for method, path in open_routes:
        assert any(r["methods"] == method and r["path"] == path for r in routes), path
        assert method == "GET"
