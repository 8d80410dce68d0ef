"""TLS without the front door (k3_front_door: false): which vLLM API servers serve HTTPS; and the
health wait checks the certificate and sends the key. With the front door (the default), nginx
terminates TLS and every engine stays on HTTP (tests/unit/test_front_door_plan.py).

The HTTPS test runs a real TLS server on the loopback with a CA and certificate made for it (tests/helpers/pki.py).
"""

from __future__ import annotations

import copy
import http.server
import ssl
import threading

import pytest
from conftest import EXAMPLES, inventory_input
from helpers.pki import make_pki

from ansible_collections.kimi_k3.serving.plugins.module_utils.service_probe import http_status
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._plan_output import plan_files
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._planner import PlanError, build_plan

TLS = {"k3_tls_cert": "/etc/kimi-k3/tls/server.pem", "k3_tls_key": "/etc/kimi-k3/tls/server.key"}


def plan_of(inv_path, **extra):
    inv = copy.deepcopy(inventory_input(str(inv_path)))
    for data in inv["hostvars"].values():
        data.update(copy.deepcopy(extra))
    return build_plan(inv)


def services(plan):
    return [(h, s) for h, d in plan["hosts"].items() for s in d["services"]]


def test_a_vllm_front_door_serves_https():
    plan = plan_of(
        EXAMPLES / "nvidia-tp8" / "hosts.yml", k3_tls_ca="/etc/kimi-k3/tls/ca.pem", k3_front_door=False, **TLS
    )
    assert plan["endpoint"]["url"].startswith("https://")
    node0 = next(s for _h, s in services(plan) if s["serves_http"])
    i = node0["argv"].index("--ssl-certfile")
    assert node0["argv"][i : i + 4] == ["--ssl-certfile", TLS["k3_tls_cert"], "--ssl-keyfile", TLS["k3_tls_key"]]
    assert node0["url"].startswith("https://") and node0["health"]["url"].startswith("https://")
    assert "/etc/kimi-k3/tls:/etc/kimi-k3/tls:ro" in node0["container"]["volumes"]
    assert plan["tls"]["enabled"] and plan["tls"]["ca"] == "/etc/kimi-k3/tls/ca.pem"
    assert "TLS: https on " in plan_files(plan)["summary.txt"]


def test_engines_behind_a_router_stay_on_http():
    plan = plan_of(EXAMPLES / "nvidia-pd-nixl" / "hosts.yml", k3_front_door=False, **TLS)
    assert plan["tls"] == {"enabled": False, "ca": None, "services": []}
    assert all("--ssl-certfile" not in s["argv"] for _h, s in services(plan))
    assert plan["endpoint"]["url"].startswith("http://")
    assert "TLS: none (set k3_tls_cert and k3_tls_key" in plan_files(plan)["summary.txt"]


def test_a_mixed_deployment_serves_https_on_its_api_servers_only():
    plan = plan_of(EXAMPLES / "a2-mixed-8node" / "hosts.yml", k3_front_door=False, **TLS)
    served = [s for _h, s in services(plan) if "--ssl-certfile" in s["argv"]]
    assert served and all(s["serves_http"] for s in served)
    assert all("--ssl-certfile" not in s["argv"] for _h, s in services(plan) if not s["serves_http"])


@pytest.mark.parametrize("given, missing", [("k3_tls_cert", "k3_tls_key"), ("k3_tls_key", "k3_tls_cert")])
def test_half_a_pair_is_refused(given, missing):
    with pytest.raises(PlanError) as exc:
        plan_of(EXAMPLES / "nvidia-tp8" / "hosts.yml", **{given: TLS[given]})
    text = "\n".join(str(p) for p in exc.value.problems)
    assert "%s: TLS needs a certificate and its key; %s is not set" % (missing, missing) in text


@pytest.fixture
def https_server(tmp_path):
    paths = make_pki(tmp_path)

    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            ok = self.headers.get("Authorization") == "Bearer sk-k3-unit"
            self.send_response(200 if ok else 401)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Health)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(paths["server.pem"], paths["server.key"])
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield "https://127.0.0.1:%d/health" % server.server_address[1], paths
    finally:
        server.shutdown()


def test_health_wait_checks_the_certificate_against_the_ca_and_sends_the_key(https_server):
    url, paths = https_server
    assert http_status(url, "sk-k3-unit", str(paths["ca.pem"])) == 200
    assert http_status(url, "", str(paths["ca.pem"])) == 401  # without the key
    assert http_status(url, "sk-k3-unit", "") is None  # an unknown CA: no answer, no exception
    assert http_status(url.replace("https", "http"), "sk-k3-unit", "") is None
