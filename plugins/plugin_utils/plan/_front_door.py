# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The front door: one nginx in front of every profile's endpoint (router, Ascend proxy or node 0).

Clients reach the deployment only here (the firewall opens ``k3_front_door_port`` to
``k3_client_networks``; the router, proxy or node 0 behind it stay open to the deployment and
``k3_admin_networks`` only). It terminates TLS (``k3_tls_cert``/``k3_tls_key``; TLS 1.2 and 1.3
with forward-secret AEAD ciphers), checks the key on every request, and forwards only an
allow-list of routes:

- client routes (``k3_front_door_client_routes``: the OpenAI-compatible inference and model-list
  routes, and ``/health``): any client key (``k3_api_key``) or the admin key;
- management routes of the backend (vllm-router's worker management, the Ascend proxy's
  ``/instances/*``): the admin key (``k3_admin_api_key``) only; a client key gets 403;
- anything else: 404.

A request without a valid key gets 401. Behind the door the deployment uses the admin key alone:
the front door replaces the caller's ``Authorization`` with it, so a client key is worth nothing
past the front door. Per-client limits (connections and requests per second per address, 429 past
them), a body limit sized for the specification's image inputs (two images per prompt as data
URLs) and hour-long timeouts for the seed client's ``timeout=3600`` and streaming. The access log
(to the journal) has no header of the request, so no key.

nginx's ``map`` compares strings ignoring case: the keys are matched with case-sensitive regular
expressions instead, which the bearer-token syntax the keys are held to (RFC 6750's b64token,
checked by the variable contract) makes safe to write.
"""

from __future__ import annotations

import re

SERVICE = "front-door"
KIND = "front_door"
KEYS_FORMAT = "nginx_front_door_keys"
CLIENT_ROUTES = ("/v1/chat/completions", "/v1/completions", "/v1/models", "/health")
# The backend's management routes (exact paths; a trailing / takes the path's subtree).
ADMIN_ROUTES = {
    "router": (
        "/add_worker",
        "/remove_worker",
        "/list_workers",
        "/workers",
        "/workers/",
        "/flush_cache",
        "/get_loads",
        "/get_server_info",
        "/get_model_info",
    ),
    "proxy": ("/instances/add", "/instances/remove"),
    "vllm": (),
}
DEFAULTS = {
    "port": 8443,
    "max_body": "64M",
    "client_connections": 512,
    "client_rate": 100,
    "key_rate": 50,
    "client_routes": list(CLIENT_ROUTES),
    "user": "www-data",
    "cors_origins": [],
    "program": "nginx",
}
VARIABLES = {
    "port": "k3_front_door_port",
    "max_body": "k3_front_door_max_body",
    "client_connections": "k3_front_door_client_connections",
    "client_rate": "k3_front_door_client_rate",
    "key_rate": "k3_front_door_key_rate",
    "client_routes": "k3_front_door_client_routes",
    "user": "k3_front_door_user",
    "cors_origins": "k3_front_door_cors_origins",
}
# What the backends say about cross-origin calls (vLLM allows every origin by default) is dropped:
# the door answers for itself, for the origins k3_front_door_cors_origins names only.
CORS_HEADERS = (
    "Access-Control-Allow-Origin",
    "Access-Control-Allow-Credentials",
    "Access-Control-Allow-Methods",
    "Access-Control-Allow-Headers",
    "Access-Control-Expose-Headers",
    "Access-Control-Max-Age",
)
# Mozilla's "intermediate" TLS 1.2 suites (TLS 1.3 picks its own): forward secrecy and AEAD only.
TLS_CIPHERS = ":".join(
    (
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        "ECDHE-RSA-AES128-GCM-SHA256",
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        "ECDHE-RSA-AES256-GCM-SHA384",
        "ECDHE-ECDSA-CHACHA20-POLY1305",
        "ECDHE-RSA-CHACHA20-POLY1305",
    )
)
_REFUSALS = {
    400: "the path must be sent as it is (no encoded characters, dot segments or repeated slashes)",
    401: "a valid API key is required",
    403: "this key may not use this route",
    404: "no such route",
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)i?[bB]?\s*$")
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def size_bytes(value):
    """Bytes of a size the variable contract accepted (64M, 1GB, 1048576)."""
    if isinstance(value, int):
        return value
    match = _SIZE.match(str(value))
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def paths(config_dir):
    return {
        "config": "%s/%s.conf" % (config_dir, SERVICE),
        "keys": "%s/%s.keys.conf" % (config_dir, SERVICE),
    }


def _refusal(status):
    return 'return %d \'{"error": {"message": "%s", "code": %d}}\';' % (status, _REFUSALS[status], status)


def _location(path, lines):
    match = "/" if path == "/" else ("^~ %s" % path if path.endswith("/") else "= %s" % path)
    return ["        location %s {" % match] + ["            " + line for line in lines] + ["        }"]


def _quoted(text):
    return "'%s'" % text.replace("\\", "\\\\").replace("'", "\\'")


def _cors(origins):
    """The http-level map of the allowed origins (an empty value adds no header)."""
    if not origins:
        return []
    return (
        ["    map $http_origin $k3_cors_origin {", '        default "";']
        + ["        %s $http_origin;" % _quoted(origin) for origin in origins]
        + ["    }"]
    )


def _preflight(origins):
    """A client route's answer to a browser's preflight (OPTIONS, which carries no key)."""
    if not origins:
        return []
    return [
        "if ($request_method = OPTIONS) { add_header Access-Control-Allow-Origin $k3_cors_origin always; "
        'add_header Access-Control-Allow-Methods "GET, POST" always; '
        'add_header Access-Control-Allow-Headers "Authorization, Content-Type" always; '
        "add_header Access-Control-Max-Age 600 always; add_header Vary Origin always; return 204; }"
    ]


def _hiding(hidden):
    """What answers must not show (internal addresses, the checkpoint's path), replaced as they pass."""
    if not hidden:
        return []
    lines = [
        "        # Internal addresses and paths replaced in answers (streamed ones too) as they pass.",
        '        proxy_set_header Accept-Encoding "";',
        "        sub_filter_types application/json text/event-stream;",
        "        sub_filter_once off;",
    ]
    return lines + ["        sub_filter %s %s;" % (_quoted(old), _quoted(new)) for old, new in hidden]


def hidden_texts(params):
    """What the door's answers must not show, each with its replacement, longest first: vLLM's
    model list carries the checkpoint's path on disk (``root``), which becomes the served model
    name (the draft's: ``draft``).

    Only what the parameters fix: the door's configuration must not change when a node leaves or
    joins (remove_node.yml, scale.yml leave the door as it is). vllm-router's P/D request ids, which
    carry the prefill and decode workers' addresses, are not the door's to hide: the decode engines'
    guard answers with their uuid alone (``K3_PLAIN_REQUEST_IDS``, ``_plan_auth.py``).
    """
    names = {}
    for key, name in (("model_path", params.get("served_model_name") or "model"), ("draft_model_path", "draft")):
        path = params.get(key)
        if isinstance(path, str) and path.startswith("/") and len(path) > 1:
            # One replacement a path: the model's name where the draft is the same folder.
            names.setdefault(path.rstrip("/"), name)
    return sorted(names.items(), key=lambda pair: (-len(pair[0]), pair[0]))


def nginx_config(settings, backend, tls, keyed, config_dir, profile, *, hidden=()):
    """The nginx configuration of the front door (no key in it: those are in the 0600 keys file).

    ``backend``: kind, ip and port of what it forwards to; ``tls``: cert and key paths (None: plain
    HTTP); ``keyed``: whether the deployment has keys (the keys file is included); ``hidden``: pairs
    of a text answers must not show and what replaces it.
    """
    origins = settings.get("cors_origins") or []
    files = paths(config_dir)
    admin_routes = ADMIN_ROUTES.get(backend["kind"], ())
    lines = [
        "# kimi_k3.serving: the front door of %s (nginx), from the plan. Edit the inventory and re-run." % profile,
        "daemon off;",
        "user %s;" % settings["user"],
        "worker_processes auto;",
        "pid %s/nginx.pid;" % settings["state_dir"],
        "error_log stderr warn;",
        "events {",
        "    worker_connections 4096;",
        "}",
        "http {",
        "    server_tokens off;",
        "    default_type application/json;",
        '    # Who is calling: client, admin or nobody (""), and the key sent behind the door.',
    ]
    if keyed:
        lines.append("    include %s;" % files["keys"])
    else:
        lines += [
            "    map $http_authorization $k3_caller {",
            "        default client;",
            "    }",
            "    map $http_authorization $k3_backend_auth {",
            '        default "";',
            "    }",
            "    map $http_authorization $k3_client_key {",
            '        default "";',
            "    }",
        ]
    lines += [
        "    # No request header in the log: the key never reaches the journal.",
        "    log_format k3 '$remote_addr \"$request_method $uri\" $status $body_bytes_sent $request_time'",
        "                  ' caller=$k3_caller upstream=$upstream_status';",
        "    access_log syslog:server=unix:/dev/log,tag=k3_front_door,nohostname k3;",
        "    client_body_temp_path %s/client-body;" % settings["state_dir"],
        "    proxy_temp_path %s/proxy;" % settings["state_dir"],
        "    fastcgi_temp_path %s/fastcgi;" % settings["state_dir"],
        "    uwsgi_temp_path %s/uwsgi;" % settings["state_dir"],
        "    scgi_temp_path %s/scgi;" % settings["state_dir"],
        "    client_max_body_size %d;" % size_bytes(settings["max_body"]),
        "    client_body_buffer_size 1m;",
        "    client_body_timeout 300s;",
        "    send_timeout 3600s;",
        "    keepalive_timeout 75s;",
        "    # The path as the client sent it (before nginx decodes %XX, resolves dot segments and merges",
        "    # slashes): a client route passes only when it is the route itself, so that no path that",
        "    # merely resolves to an allowed route reaches the backend in its raw form.",
        "    map $request_uri $k3_raw_path {",
        '        "~^(?<k3_sent_path>[^?]*)" $k3_sent_path;',
        "    }",
        "    map $status $k3_www_authenticate {",
        "        401 Bearer;",
        '        default "";',
        "    }",
        *_cors(origins),
        "    limit_conn_status 429;",
        "    limit_req_status 429;",
    ]
    if settings["client_connections"]:
        lines.append("    limit_conn_zone $binary_remote_addr zone=k3_conn:10m;")
    if settings["client_rate"]:
        lines.append("    limit_req_zone $binary_remote_addr zone=k3_req:10m rate=%dr/s;" % settings["client_rate"])
    if settings.get("key_rate"):
        # Per client key, from all its addresses: the keys file numbers them (never the key itself here).
        lines.append("    limit_req_zone $k3_client_key zone=k3_key_req:10m rate=%dr/s;" % settings["key_rate"])
    lines += [
        "    upstream k3_backend {",
        "        server %s:%d;" % (backend["ip"], backend["port"]),
        "        keepalive 64;",
        "    }",
        "    server {",
        "        listen %d%s;" % (settings["port"], " ssl" if tls["cert"] else ""),
    ]
    if tls["cert"]:
        lines += [
            "        ssl_certificate %s;" % tls["cert"],
            "        ssl_certificate_key %s;" % tls["key"],
            "        ssl_protocols TLSv1.2 TLSv1.3;",
            "        ssl_ciphers %s;" % TLS_CIPHERS,
            "        ssl_prefer_server_ciphers off;",
            "        ssl_session_cache shared:k3_tls:10m;",
            "        ssl_session_tickets off;",
            "        # Browsers that once reached the door over HTTPS never try it in plain HTTP again.",
            '        add_header Strict-Transport-Security "max-age=31536000" always;',
        ]
    if settings["client_connections"]:
        lines.append("        limit_conn k3_conn %d;" % settings["client_connections"])
    if settings["client_rate"]:
        lines.append("        limit_req zone=k3_req burst=%d nodelay;" % (2 * settings["client_rate"]))
    if settings.get("key_rate"):
        lines.append("        limit_req zone=k3_key_req burst=%d nodelay;" % (2 * settings["key_rate"]))
    lines += [
        "        proxy_http_version 1.1;",
        '        proxy_set_header Connection "";',
        "        proxy_set_header Host $host;",
        "        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;",
        "        proxy_set_header X-Forwarded-Proto $scheme;",
        "        proxy_set_header Authorization $k3_backend_auth;",
        "        # Streaming answers go out as they come; an hour for the longest (1M-token) requests.",
        "        proxy_buffering off;",
        "        proxy_connect_timeout 10s;",
        "        proxy_send_timeout 3600s;",
        "        proxy_read_timeout 3600s;",
        "        add_header WWW-Authenticate $k3_www_authenticate always;",
        *["        proxy_hide_header %s;" % header for header in CORS_HEADERS],
    ]
    if origins:
        lines += [
            "        add_header Access-Control-Allow-Origin $k3_cors_origin always;",
            "        add_header Vary Origin always;",
        ]
    lines += _hiding(hidden)
    for path in settings["client_routes"]:
        lines += _location(
            path,
            [
                *_preflight(origins),
                'if ($k3_caller = "") { %s }' % _refusal(401),
                "if ($k3_raw_path != $uri) { %s }" % _refusal(400),
                "proxy_pass http://k3_backend;",
            ],
        )
    for path in admin_routes:
        if keyed:
            body = [
                'if ($k3_caller = "") { %s }' % _refusal(401),
                'if ($k3_caller != "admin") { %s }' % _refusal(403),
                "proxy_pass http://k3_backend;",
            ]
        else:  # no admin key: management stays with the admin networks, on the backend's own port
            body = [_refusal(403)]
        lines += _location(path, body)
    lines += _location("/", ['if ($k3_caller = "") { %s }' % _refusal(401), _refusal(404)])
    lines += ["    }", "}", ""]
    return "\n".join(lines)


def _exact(key):
    """A case-sensitive nginx regular expression of ``Bearer <key>`` (key: RFC 6750 b64token)."""
    return "~^Bearer %s$" % re.sub(r"[.+]", lambda m: "[%s]" % m.group(0), key)


def keys_file(client_keys, admin_key):
    """The 0600 include with the keys: who is calling, and the key sent to the backend."""
    internal = admin_key or (client_keys[0] if client_keys else "")
    lines = [
        "# kimi_k3.serving: the front door's keys (k3_api_key, k3_admin_api_key). 0600, root.",
        "map $http_authorization $k3_caller {",
        '    default "";',
    ]
    lines += ['    "%s" client;' % _exact(key) for key in client_keys if key != admin_key]
    if admin_key:
        lines.append('    "%s" admin;' % _exact(admin_key))
    lines += [
        "}",
        "map $http_authorization $k3_backend_auth {",
        '    default "Bearer %s";' % internal,
        "}",
        "# Which client key (its number), for the per-key request rate; the admin key is not limited.",
        "map $http_authorization $k3_client_key {",
        '    default "";',
    ]
    clients = [key for key in client_keys if key != admin_key]
    lines += ['    "%s" client-%d;' % (_exact(key), number) for number, key in enumerate(clients, 1)]
    lines += [
        "}",
        "",
    ]
    return "\n".join(lines)
