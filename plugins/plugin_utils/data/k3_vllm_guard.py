# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""kimi_k3.serving: the key on every route of a vLLM API server (vLLM's --middleware).

vLLM's own check (VLLM_API_KEY, --api-key) covers only paths under /v1, /v2, /inference and
/cohere; the app registers more that run inference or change state (/invocations,
/scale_elastic_ep, /tokenize ...). This ASGI middleware sits in front of all of them: a request
passes only with ``Authorization: Bearer <key>`` for one of the keys in K3_API_KEYS (comma
separated; VLLM_API_KEY when unset), except ``GET /health`` and ``GET /metrics`` (read only:
health checks and Prometheus). A WebSocket without the key is closed before it is accepted.
Without any key it lets everything through, as vLLM does. The keys are compared in constant time
and never logged.

Loaded with ``--middleware k3_vllm_guard.KeyGuard`` and this file's folder on PYTHONPATH.
"""

import hmac
import json
import os

OPEN_ROUTES = frozenset((("GET", "/health"), ("GET", "/metrics")))
_REFUSAL = json.dumps({"error": {"message": "a valid API key is required", "type": "authentication_error"}}).encode()


def _tokens():
    raw = os.environ.get("K3_API_KEYS") or os.environ.get("VLLM_API_KEY") or ""
    return [("Bearer " + key.strip()).encode() for key in raw.split(",") if key.strip()]


class KeyGuard:
    """ASGI middleware: 401 for a request without a valid key on any route but the open ones."""

    def __init__(self, app):
        self.app = app
        self.tokens = _tokens()

    def allowed(self, scope):
        if not self.tokens:
            return True
        if (scope.get("method", "GET"), scope.get("path", "")) in OPEN_ROUTES:
            return True
        given = b""
        for name, value in scope.get("headers") or ():
            if name.lower() == b"authorization":
                given = value
                break
        return any(hmac.compare_digest(given, token) for token in self.tokens)

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket") or self.allowed(scope):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(_REFUSAL)).encode()),
                    (b"www-authenticate", b"Bearer"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": _REFUSAL})
