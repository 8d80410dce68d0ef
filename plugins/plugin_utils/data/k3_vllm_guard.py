# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""kimi_k3.serving: the key on every route of a vLLM API server, and the deployment's request limits.

vLLM's own check (VLLM_API_KEY, --api-key) covers only paths under /v1, /v2, /inference and
/cohere; the app registers more that run inference or change state (/invocations,
/scale_elastic_ep, /tokenize ...). This ASGI middleware (vLLM's --middleware) sits in front of all
of them: a request passes only with ``Authorization: Bearer <key>`` for one of the keys in
K3_API_KEYS (comma separated; VLLM_API_KEY when unset), except ``GET /health`` and ``GET /metrics``
(read only: health checks and Prometheus). A WebSocket without the key is closed before it is
accepted. Without any key it lets everything through, as vLLM does. The keys are compared in
constant time and never logged.

The limits (K3_REQUEST_LIMITS, JSON: ``{"n": 8, "best_of": 8, "max_tokens": 131072}``, each
optional) hold on the generation routes (POST /v1/chat/completions, /v1/completions): a request
asking for more choices (``n``, ``best_of``) or more output tokens (``max_tokens``,
``max_completion_tokens``) than the deployment allows gets a 400 in OpenAI's error shape, naming
the field and the limit, before it costs engine time; each refusal is counted on the API server's
/metrics as ``k3_requests_refused_total{limit="n"}``. A body that is not JSON is left to vLLM.

With K3_PLAIN_REQUEST_IDS=1 (a P/D deployment's decode engines, whose answers go to clients), a
generation request whose ``X-Request-Id`` is vllm-router's P/D one
(``___prefill_addr_<address>___decode_addr_<address>_<uuid>``: the KV connectors find each other by
it) is answered with that id's last part, the uuid, in its place: no internal address reaches a
client (vLLM puts the id into every answer and every streamed event of it).

Loaded with ``--middleware k3_vllm_guard.KeyGuard`` and this file's folder on PYTHONPATH.
"""

import hmac
import json
import os

OPEN_ROUTES = frozenset((("GET", "/health"), ("GET", "/metrics")))
LIMITED_ROUTES = frozenset(("/v1/chat/completions", "/v1/completions"))
# Request field -> the limit that holds it.
LIMITED_FIELDS = (
    ("n", "n"),
    ("best_of", "best_of"),
    ("max_tokens", "max_tokens"),
    ("max_completion_tokens", "max_tokens"),
)
# vllm-router's P/D request ids carry the workers' addresses after this mark.
PEER_ID_MARK = b"___prefill_addr_"
_REFUSAL = json.dumps({"error": {"message": "a valid API key is required", "type": "authentication_error"}}).encode()


def _tokens():
    raw = os.environ.get("K3_API_KEYS") or os.environ.get("VLLM_API_KEY") or ""
    return [("Bearer " + key.strip()).encode() for key in raw.split(",") if key.strip()]


def _limits():
    try:
        limits = json.loads(os.environ.get("K3_REQUEST_LIMITS") or "{}")
    except ValueError:
        return {}
    return {k: int(v) for k, v in limits.items() if isinstance(v, int) and not isinstance(v, bool) and v > 0}


_COUNTERS = []


def _counter():
    """``k3_requests_refused_total{limit}`` on the process's registry, made once (None without prometheus_client)."""
    if not _COUNTERS:
        try:
            from prometheus_client import Counter  # noqa: PLC0415 (vLLM's own; optional here)
        except ImportError:
            return None
        _COUNTERS.append(
            Counter("k3_requests_refused", "Requests refused by the deployment's request limits", ["limit"])
        )
    return _COUNTERS[0]


def over_limit(body, limits):
    """(field, value, limit) of the first field of a JSON request ``body`` over its limit, or None."""
    try:
        request = json.loads(body)
    except ValueError:
        return None
    if not isinstance(request, dict):
        return None
    for field, limit in LIMITED_FIELDS:
        value = request.get(field)
        if limit in limits and isinstance(value, int) and not isinstance(value, bool) and value > limits[limit]:
            return field, value, limits[limit]
    return None


def peer_id(scope):
    """The request's ``X-Request-Id`` where it is vllm-router's P/D id (with addresses), else None."""
    for name, value in scope.get("headers") or ():
        if name.lower() == b"x-request-id" and value.startswith(PEER_ID_MARK):
            return value
    return None


def plain_ids(send, request_id):
    """``send`` with ``request_id`` replaced by its last part (the uuid) in every body message; the
    length of a whole answer follows (a streamed one has none)."""
    plain = request_id.rsplit(b"_", 1)[-1]
    held = []

    async def sending(message):
        if message["type"] == "http.response.start":
            held.append(message)  # sent with the first body, whose length may change
            return
        if message["type"] == "http.response.body":
            message = dict(message, body=message.get("body", b"").replace(request_id, plain))
            if held:
                start = held.pop()
                headers = [(k, v) for k, v in start.get("headers") or () if k.lower() != b"content-length"]
                if not message.get("more_body"):
                    headers.append((b"content-length", str(len(message["body"])).encode()))
                await send(dict(start, headers=headers))
        await send(message)

    return sending


async def _respond(send, status, body, extra=()):
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *extra],
        }
    )
    await send({"type": "http.response.body", "body": body})


class KeyGuard:
    """ASGI middleware: 401 without a valid key on any route but the open ones; 400 over a limit."""

    def __init__(self, app):
        self.app = app
        self.tokens = _tokens()
        self.limits = _limits()
        self.refused = _counter() if self.limits else None
        self.plain_ids = os.environ.get("K3_PLAIN_REQUEST_IDS") == "1"

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

    def generating(self, scope):
        return scope["type"] == "http" and scope.get("method") == "POST" and scope.get("path") in LIMITED_ROUTES

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket") or self.allowed(scope):
            if self.generating(scope):
                request_id = peer_id(scope) if self.plain_ids else None
                if request_id:
                    send = plain_ids(send, request_id)
                if self.limits:
                    await self.limited(scope, receive, send)
                    return
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        await _respond(send, 401, _REFUSAL, [(b"www-authenticate", b"Bearer")])

    async def limited(self, scope, receive, send):
        """Read the body, refuse it over a limit, else hand it on to vLLM unchanged."""
        chunks = []
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        found = over_limit(body, self.limits)
        if found:
            field, value, limit = found
            if self.refused is not None:
                self.refused.labels(limit=dict(LIMITED_FIELDS)[field]).inc()
            message = "%s=%d is over this deployment's limit of %d" % (field, value, limit)
            error = {"message": message, "type": "invalid_request_error", "param": field, "code": "limit_exceeded"}
            await _respond(send, 400, json.dumps({"error": error}).encode())
            return
        sent = False

        async def replay():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)
