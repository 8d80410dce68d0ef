"""The front door's planned configuration, run by the real nginx (Debian's package) on the loopback.

For each kind of backend a profile puts behind it (vllm-router: nvidia-pd-nixl; the Ascend P/D
proxy: a3-pd-8p8d, which cannot run here; node 0's vLLM: a2-mixed-8node), the planner's nginx
configuration and the keys file the role writes (the secret_file filter's text) run in nginx in
front of a small HTTP backend that records what reaches it. Every route is called as a caller
without a key, with a wrong key, with a client key and with the admin key: 401 without a valid
key, the client routes open to both keys, the management routes to the admin key only (403 for a
client key), everything else 404; the backend only ever sees the admin key; plain HTTP and TLS
1.1 are refused; a body over the limit gets 413; the access log holds no key.
"""

from __future__ import annotations

import contextlib
import copy
import http.client
import http.server
import json
import os
import re
import socket
import ssl
import subprocess
import threading
import time
import warnings

import pytest
from conftest import EXAMPLES, inventory_input, nginx_program, vllm_routes
from helpers.listening import free_port, wait_listening
from helpers.pki import make_pki
from helpers.secured_sandbox import ROUTER_ROUTES
from helpers.tls_scan import SSLYZE, scan

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _front_door as door
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._plan_auth import secret_file_content
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._planner import build_plan

CLIENT = "sk-k3-door-client-Ab3.d+e/f=="
OTHER = "sk-k3-door-client-2-xyz"
ADMIN = "sk-k3-door-admin-Q9r8s7"
PROFILES = {"nvidia-pd-nixl": "router", "a3-pd-8p8d": "proxy", "a2-mixed-8node": "vllm"}


class Backend(http.server.ThreadingHTTPServer):
    """Answers 200 with what it was sent: the path and the Authorization header."""

    daemon_threads = True

    def __init__(self):
        self.seen = []
        self.extra = {}  # more of what it answers (internal addresses, a path)
        super().__init__(("127.0.0.1", 0), Recorder)


class Recorder(http.server.BaseHTTPRequestHandler):
    def answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.server.seen.append((self.path, self.headers.get("Authorization")))
        body = json.dumps({"path": self.path, **self.server.extra}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Access-Control-Allow-Origin", "*")  # as vLLM answers by default
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_DELETE = answer  # noqa: N815

    def log_message(self, *args):
        pass


def planned(profile):
    inv = copy.deepcopy(inventory_input(str(EXAMPLES / profile / "hosts.yml")))
    for data in inv["hostvars"].values():
        data.update(k3_api_key=[CLIENT, OTHER], k3_admin_api_key=ADMIN)
        data.update(k3_tls_cert="/etc/kimi-k3/tls/door.pem", k3_tls_key="/etc/kimi-k3/tls/door.key")
    plan = build_plan(inv)
    doors = [s for d in plan["hosts"].values() for s in d["services"] if s["kind"] == "front_door"]
    assert len(doors) == 1
    return plan, doors[0]


@pytest.fixture(params=sorted(PROFILES))
def door_up(request, tmp_path):
    """nginx running the planned front door of a profile, in front of a recording backend."""
    with running_door(request.param, tmp_path) as up:
        yield up


@contextlib.contextmanager
def running_door(profile, tmp_path, **more):
    """The planned front door of ``profile`` (its settings changed by ``more``) running in nginx."""
    plan, svc = planned(profile)
    backend = Backend()
    threading.Thread(target=backend.serve_forever, daemon=True).start()
    pki = make_pki(tmp_path)
    port = free_port()
    state = tmp_path / "state"
    state.mkdir()
    settings = dict(door.DEFAULTS, port=port, state_dir=str(state), max_body="1M", client_rate=0, key_rate=0)
    settings["user"] = "root" if os.geteuid() == 0 else "nobody"
    settings.update(more)
    target = dict(svc["backend"], ip="127.0.0.1", port=backend.server_address[1])
    tls = {"cert": str(pki["server.pem"]), "key": str(pki["server.key"])}
    hidden = door.hidden_texts(plan["parameters"])
    text = door.nginx_config(settings, target, tls, True, str(tmp_path), profile, hidden=hidden)
    # The hosts log to the journal (syslog); here to a file, in the same format.
    log = tmp_path / "access.log"
    text = text.replace("syslog:server=unix:/dev/log,tag=k3_front_door,nohostname", str(log))
    config = tmp_path / "front-door.conf"
    config.write_text(text)
    keys = secret_file_content(svc["secret_files"][0], [CLIENT, OTHER], ADMIN)
    (tmp_path / "front-door.keys.conf").write_text(keys)
    proc = subprocess.Popen(
        [str(nginx_program()), "-c", str(config), "-e", "stderr"], stderr=subprocess.PIPE, text=True
    )
    context = ssl.create_default_context(cafile=str(pki["ca.pem"]))
    wait_listening(port, proc, "nginx")
    try:
        yield {
            "profile": profile,
            "kind": PROFILES[profile],
            "port": port,
            "context": context,
            "ca": pki["ca.pem"],
            "backend": backend,
            "log": log,
            "svc": svc,
        }
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        backend.shutdown()


def call(door_up, method, path, key=None, body=None, headers=None):
    conn = http.client.HTTPSConnection("127.0.0.1", door_up["port"], context=door_up["context"], timeout=10)
    sent = dict(headers or {})
    if key is not None:
        sent["Authorization"] = "Bearer " + key
    data = body if body is not None else (b"{}" if method != "GET" else None)
    try:
        conn.request(method, path, body=data, headers=sent)
        resp = conn.getresponse()
        return resp.status, resp.read().decode(), dict(resp.getheaders())
    finally:
        conn.close()


def test_the_planned_door_is_the_endpoint_on_the_backends_host(door_up):
    svc = door_up["svc"]
    assert svc["backend"]["kind"] == door_up["kind"]
    assert svc["argv"][1:] == ["-c", "/etc/kimi-k3/front-door.conf", "-e", "stderr"]
    assert svc["ports"] == [{"name": "https", "port": 8443, "count": 1}]


def test_no_route_answers_without_a_valid_key(door_up):
    admin_routes = door.ADMIN_ROUTES[door_up["kind"]]
    paths = list(door.CLIENT_ROUTES) + [p + "x" if p.endswith("/") else p for p in admin_routes]
    paths += ["/invocations", "/scale_elastic_ep", "/", "/metrics", "/v1/embeddings", "/docs"]
    for path in paths:
        for method in ("GET", "POST"):
            for key in (None, "sk-k3-wrong", CLIENT.upper(), CLIENT + "x", "Bearer " + CLIENT):
                status, body, headers = call(door_up, method, path, key)
                assert status == 401, (path, method, key and key[:12], status)
                assert headers.get("WWW-Authenticate") == "Bearer"
    assert door_up["backend"].seen == []


def test_clients_reach_the_client_routes_and_the_backend_sees_only_the_admin_key(door_up):
    for key in (CLIENT, OTHER, ADMIN):
        for path in door.CLIENT_ROUTES:
            status, body, headers = call(door_up, "POST" if "completions" in path else "GET", path, key)
            assert status == 200, (path, status, body)
            assert json.loads(body)["path"] == path
            assert "WWW-Authenticate" not in headers
    seen = door_up["backend"].seen
    assert len(seen) == 3 * len(door.CLIENT_ROUTES)
    assert {auth for _path, auth in seen} == {"Bearer " + ADMIN}


def test_management_routes_take_the_admin_key_alone(door_up):
    admin_routes = door.ADMIN_ROUTES[door_up["kind"]]
    if not admin_routes:
        pytest.skip("node 0's vLLM has no management route at the front door")
    for path in admin_routes:
        path = path + "http%3A%2F%2F10.0.0.9%3A8000" if path.endswith("/") else path
        assert call(door_up, "POST", path, CLIENT)[0] == 403, path
        assert call(door_up, "POST", path, OTHER)[0] == 403, path
        status, body, _headers = call(door_up, "POST", path, ADMIN)
        assert status == 200 and json.loads(body)["path"] == path, (path, status)


def test_every_route_of_the_pinned_vllm_and_router_is_refused_without_a_key(door_up):
    """The route test of the sandbox (tests/security), on each profile's planned front door: every
    route of the pinned vLLM (read from its app) and vllm-router (read from its binary) answers 401
    without a valid key; with a client key only the client routes reach the backend (the backend's
    management routes 403, the rest 404)."""
    routes = {(r["methods"], r["path"]) for r in vllm_routes(CLIENT)} | set(ROUTER_ROUTES)
    admin = door.ADMIN_ROUTES[door_up["kind"]]
    wrong = []
    for method, path in sorted(routes):
        path = re.sub(r"\{[^}]+\}", "x", path)
        for key in (None, "sk-k3-wrong"):
            if call(door_up, method, path, key)[0] != 401:
                wrong.append((method, path, key))
        if path in door.CLIENT_ROUTES:
            continue
        managed = path in admin or any(a.endswith("/") and path.startswith(a) for a in admin)
        status = call(door_up, method, path, CLIENT)[0]
        if status != (403 if managed else 404):
            wrong.append((method, path, "client key", status))
    assert wrong == []
    assert door_up["backend"].seen == []


# Paths that nginx resolves to a client route (or to none) but that are not the route as sent: the
# outside tester's DELETE /workers/..%2Fv1%2Fmodels reached vllm-router's worker removal with the
# client key, because nginx chose the location on the resolved path and passed the raw one.
PATH_TRICKS = [
    ("DELETE", "/workers/..%2Fv1%2Fmodels"),
    ("DELETE", "/workers/..%2f..%2fv1%2fmodels"),
    ("GET", "/v1/./models"),
    ("GET", "//v1/models"),
    ("GET", "/v1//models"),
    ("GET", "/x/../v1/models"),
    ("GET", "/v1/%6dodels"),
    ("GET", "/v1%2Fmodels"),
    ("GET", "/v1/models/."),
    ("GET", "/v1/%2e%2e/v1/models"),
    ("GET", "/v1/%252e%252e/v1/models"),
    ("GET", "/V1/MODELS"),
    ("POST", "/v1/chat/completions/..%2F..%2F..%2Fworkers"),
    ("POST", "/v1/completions%00"),
]


def test_a_path_that_only_resolves_to_a_client_route_never_reaches_the_backend(door_up):
    for method, path in PATH_TRICKS:
        status, body, _headers = call(door_up, method, path, CLIENT)
        # 400 where it resolves to a client route; else the location it resolves to refuses it.
        assert status in (400, 403, 404), (method, path, status, body)
    assert call(door_up, "DELETE", "/workers/..%2Fv1%2Fmodels", CLIENT)[0] == 400
    assert door_up["backend"].seen == []
    # The refusal of one does not stop the next keyed request.
    assert call(door_up, "GET", "/v1/models", CLIENT)[0] == 200
    assert door_up["backend"].seen == [("/v1/models", "Bearer " + ADMIN)]


def test_a_strict_x509_client_accepts_the_door_which_asks_for_https_only(door_up):
    """Python 3.13's default context (so the OpenAI SDK there) verifies strictly: key identifiers."""
    door_up["context"].verify_flags |= ssl.VERIFY_X509_STRICT
    status, _body, headers = call(door_up, "GET", "/v1/models", CLIENT)
    assert status == 200 and headers["Strict-Transport-Security"] == "max-age=31536000"
    assert call(door_up, "GET", "/v1/models")[2]["Strict-Transport-Security"] == "max-age=31536000"


@pytest.mark.skipif(not SSLYZE.exists(), reason="no sslyze: tools/venvs.sh scan")
def test_a_tls_scan_finds_no_weak_suite_and_a_chain_valid_under_strict_checks(door_up, tmp_path):
    found = scan("127.0.0.1:%d" % door_up["port"], door_up["ca"], tmp_path)
    assert found["weak"] == [] and found["chain"] == []
    assert found["accepted"]["tls_1_2"] and found["accepted"]["tls_1_3"]


def test_answers_show_no_checkpoint_path_and_no_cors(door_up):
    """vLLM's model list carries the checkpoint's path: the door replaces it with the served model
    name as answers pass, and drops vLLM's Access-Control-Allow-Origin: *."""
    plan, _svc = planned(door_up["profile"])
    model = plan["parameters"]["model_path"]
    door_up["backend"].extra = {"data": [{"id": "kimi-k3", "root": model}]}
    status, body, headers = call(door_up, "GET", "/v1/models", CLIENT, headers={"Origin": "https://evil.example"})
    answer = json.loads(body)
    assert status == 200 and answer["data"][0]["root"] == plan["parameters"]["served_model_name"], answer
    assert model not in body
    assert not any(h.lower().startswith("access-control-") for h in headers), headers


def test_the_origins_the_inventory_names_and_only_they_get_cors_answers(tmp_path):
    with running_door("nvidia-pd-nixl", tmp_path, cors_origins=["https://app.example"]) as up:
        app, evil = {"Origin": "https://app.example"}, {"Origin": "https://evil.example"}
        status, _body, headers = call(up, "OPTIONS", "/v1/chat/completions", headers=app)
        assert status == 204 and headers["Access-Control-Allow-Origin"] == "https://app.example"
        assert "Authorization" in headers["Access-Control-Allow-Headers"]
        status, _body, headers = call(up, "POST", "/v1/chat/completions", CLIENT, headers=app)
        assert status == 200 and headers["Access-Control-Allow-Origin"] == "https://app.example"
        status, _body, headers = call(up, "POST", "/v1/chat/completions", CLIENT, headers=evil)
        assert status == 200 and "Access-Control-Allow-Origin" not in headers
        # A preflight is no way around the key: OPTIONS elsewhere, and a call without one, are refused.
        assert call(up, "OPTIONS", "/workers", headers=app)[0] == 401
        assert call(up, "POST", "/v1/chat/completions", headers=app)[0] == 401
        assert [path for path, _auth in up["backend"].seen] == ["/v1/chat/completions"] * 2


def test_each_client_key_has_its_own_request_rate_and_the_admin_key_none(tmp_path):
    """k3_front_door_key_rate: 2 requests per second per client key, a burst of 4 at once; the
    fifth at once is a 429 that the backend never sees, while another key, and the admin key, pass."""
    with running_door("nvidia-pd-nixl", tmp_path, key_rate=2) as up:
        statuses = [call(up, "GET", "/v1/models", CLIENT)[0] for _unused in range(8)]
        assert statuses[:5] == [200] * 5 and 429 in statuses[5:], statuses  # the first, then a burst of 4
        assert call(up, "GET", "/v1/models", OTHER)[0] == 200
        assert [call(up, "GET", "/list_workers", ADMIN)[0] for _unused in range(8)] == [200] * 8
        assert len(up["backend"].seen) == statuses.count(200) + 1 + 8
        time.sleep(1.1)
        assert call(up, "GET", "/v1/models", CLIENT)[0] == 200


def test_any_other_route_is_not_found(door_up):
    for path in ("/invocations", "/scale_elastic_ep", "/tokenize", "/v1/embeddings", "/metrics", "/docs", "/x"):
        for key in (CLIENT, ADMIN):
            assert call(door_up, "POST", path, key)[0] == 404, path
    assert door_up["backend"].seen == []


def test_plain_http_and_old_tls_are_refused(door_up):
    conn = http.client.HTTPConnection("127.0.0.1", door_up["port"], timeout=10)
    conn.request("GET", "/v1/models", headers={"Authorization": "Bearer " + CLIENT})
    resp = conn.getresponse()
    assert resp.status == 400 and b"HTTPS port" in resp.read()
    old = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    old.check_hostname = False
    old.verify_mode = ssl.CERT_NONE
    with warnings.catch_warnings():  # an old protocol on purpose
        warnings.simplefilter("ignore", DeprecationWarning)
        old.minimum_version = old.maximum_version = ssl.TLSVersion.TLSv1_1
    old.set_ciphers("ALL:@SECLEVEL=0")
    with pytest.raises(ssl.SSLError), socket.create_connection(("127.0.0.1", door_up["port"])) as sock:
        old.wrap_socket(sock)
    assert door_up["backend"].seen == []


def test_a_body_over_the_limit_is_refused(door_up):
    status, _body, _headers = call(door_up, "POST", "/v1/chat/completions", CLIENT, body=b"x" * (2 << 20))
    assert status == 413
    assert door_up["backend"].seen == []


def test_the_access_log_has_no_key(door_up):
    call(door_up, "GET", "/v1/models", CLIENT)
    call(door_up, "GET", "/v1/models", "sk-k3-wrong-logged")
    time.sleep(0.2)
    text = door_up["log"].read_text()
    assert '"GET /v1/models" 200' in text and "caller=client" in text and '"GET /v1/models" 401' in text
    for key in (CLIENT, OTHER, ADMIN, "sk-k3-wrong-logged"):
        assert key not in text
