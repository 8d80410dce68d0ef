# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Every route of the pinned vLLM's API server, asked of a real app with the collection's guard.

Run with .venv/vllm's Python: ``python vllm_routes.py GUARD_DIR KEY``. It builds vLLM's own FastAPI
app (``vllm.entrypoints.launchers.app.build_app``) from the serve parser, with every task that
adds routes (generation, speech, render, and the pooling routers, which vLLM adds only for a
pooling model), the developer routes (VLLM_SERVER_DEV_MODE=1) and fault tolerance on, and
``--middleware k3_vllm_guard.KeyGuard`` the way the plan starts vLLM. No engine runs: each route
is called in process (Starlette's TestClient, no lifespan) once without a key, once with a wrong
key and once with the key, and the statuses are printed as JSON, one entry per route:
``{"methods", "path", "kind", "none", "wrong", "key"}``. A WebSocket route reports "closed" or
"accepted".
"""

from __future__ import annotations

import json
import os
import re
import sys
import typing


def _app(guard_dir, key):
    os.environ["VLLM_SERVER_DEV_MODE"] = "1"
    os.environ["K3_API_KEYS"] = key
    sys.path.insert(0, guard_dir)
    from vllm.entrypoints.cli.serve import ServeSubcommand
    from vllm.entrypoints.launchers.app import build_app
    from vllm.tasks import SupportedTask
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = FlexibleArgumentParser(prog="vllm")
    sub = parser.add_subparsers(dest="subparser")
    ServeSubcommand().subparser_init(sub)
    args = parser.parse_args(
        ["serve", "/nonexistent-model", "--middleware", "k3_vllm_guard.KeyGuard", "--enable-fault-tolerance"]
    )
    tasks = tuple(_flatten(SupportedTask))
    app = build_app(args, supported_tasks=tasks)
    # The pooling routers need a pooling model's configuration to be registered: add them all.
    import importlib

    for name in ("pooling", "classify", "embed", "scoring"):
        app.include_router(importlib.import_module("vllm.entrypoints.pooling.%s.api_router" % name).router)
    return app


def _flatten(literal):
    out = []
    for arg in typing.get_args(literal):
        out.extend(_flatten(arg) if typing.get_args(arg) else [arg])
    return out


def _routes(app):
    from starlette.routing import Mount, WebSocketRoute

    for route in app.routes:
        if isinstance(route, WebSocketRoute):
            yield "websocket", ["GET"], route.path
        elif isinstance(route, Mount):
            yield "mount", ["GET"], route.path
        else:
            yield "http", sorted(getattr(route, "methods", None) or ["GET"]), route.path


def _call(client, kind, method, path, headers):
    url = re.sub(r"\{[^}]+\}", "x", path) or "/"
    if kind == "websocket":
        from starlette.websockets import WebSocketDisconnect

        try:
            with client.websocket_connect(url, headers=headers):
                return "accepted"
        except WebSocketDisconnect:
            return "closed"
        except Exception:  # accepted, then failed for want of an engine
            return "accepted"
    try:
        return client.request(method, url, headers=headers, json={}).status_code
    except Exception:  # the route ran and failed for want of an engine: it was let through
        return 599


def main():
    guard_dir, key = sys.argv[1], sys.argv[2]
    app = _app(guard_dir, key)
    from starlette.testclient import TestClient

    client = TestClient(app, raise_server_exceptions=False)
    out = []
    for kind, methods, path in _routes(app):
        for method in [m for m in methods if m != "HEAD"] or methods:
            out.append(
                {
                    "methods": method,
                    "path": path,
                    "kind": kind,
                    "none": _call(client, kind, method, path, {}),
                    "wrong": _call(client, kind, method, path, {"Authorization": "Bearer wrong-" + key}),
                    "key": _call(client, kind, method, path, {"Authorization": "Bearer " + key}),
                }
            )
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
