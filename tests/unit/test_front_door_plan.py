"""The front door in the plan: on every profile's endpoint host, in front of its router, proxy or
node 0; the firewall opens only its port to clients; the inventory mistakes around it are refused
(naming the host, the variable and the fix) and no key reaches the plan.

Its configuration is run by the real nginx in tests/integration/test_front_door.py.
"""

from __future__ import annotations

import copy
import json

import pytest
from conftest import EXAMPLES, example_names, inventory_input

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations._firewall import host_rules
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _front_door as door
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._plan_auth import secret_file_content
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._plan_schema import validate_plan
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._planner import PlanError, build_plan

KEY = "sk-k3-unit-door-client"
ADMIN = "sk-k3-unit-door-admin"


def inventory(name, **values):
    inv = copy.deepcopy(inventory_input(str(EXAMPLES / name / "hosts.yml")))
    for data in inv["hostvars"].values():
        data.update(copy.deepcopy(values))
    return inv


def problems(inv):
    with pytest.raises(PlanError) as exc:
        build_plan(inv)
    return "\n".join(str(p) for p in exc.value.problems)


@pytest.mark.parametrize("name", example_names())
def test_every_profile_has_its_front_door_on_the_endpoint_host(name):
    plan = build_plan(inventory(name, k3_api_key=KEY, k3_admin_api_key=ADMIN, k3_client_networks=["192.0.2.0/24"]))
    validate_plan(plan)
    endpoint, backend = plan["endpoint"], plan["endpoint"]["backend"]
    assert endpoint["service"] == "front-door" and endpoint["port"] == 8443
    assert endpoint["host"] == backend["host"] and endpoint["url"].startswith("http://")
    (svc,) = [s for s in plan["hosts"][endpoint["host"]]["services"] if s["kind"] == "front_door"]
    assert svc["backend"]["kind"] in ("router", "proxy", "vllm")
    assert svc["after"] == ["%s/%s" % (backend["host"], backend["service"])]
    assert svc["secret_files"] == [{"path": "/etc/kimi-k3/front-door.keys.conf", "format": door.KEYS_FORMAT}]
    assert "server %s:%d;" % (plan["hosts"][endpoint["host"]]["ip"], backend["port"]) in svc["files"][0]["content"]
    # Clients reach the front door's port and no other; the backend's stays with the deployment.
    rules = host_rules(plan, endpoint["host"], ["192.0.2.0/24"], [])
    assert rules["endpoint_ports"] == [8443]
    client_lines = [line for line in rules["ruleset"].splitlines() if "@clients4" in line]
    assert client_lines == ['    tcp dport { 8443 } ip saddr @clients4 accept comment "clients"']
    text = json.dumps(plan)
    assert KEY not in text and ADMIN not in text


def test_tls_is_the_front_doors_and_the_engines_stay_on_http():
    plan = build_plan(
        inventory(
            "a2-mixed-8node",
            k3_api_key=KEY,
            k3_admin_api_key=ADMIN,
            k3_tls_cert="/etc/pki/door.pem",
            k3_tls_key="/etc/pki/door.key",
            k3_tls_ca="/etc/pki/ca.pem",
        )
    )
    host = plan["endpoint"]["host"]
    assert plan["endpoint"]["url"].startswith("https://")
    assert plan["tls"] == {"enabled": True, "ca": "/etc/pki/ca.pem", "services": ["%s/front-door" % host]}
    assert all("--ssl-certfile" not in s["argv"] for d in plan["hosts"].values() for s in d["services"])
    (svc,) = [s for s in plan["hosts"][host]["services"] if s["kind"] == "front_door"]
    assert svc["health"]["url"].startswith("https://") and svc["ports"][0]["name"] == "https"
    content = svc["files"][0]["content"]
    assert "listen 8443 ssl;" in content and "ssl_protocols TLSv1.2 TLSv1.3;" in content


def test_without_a_front_door_the_endpoint_is_the_router_again():
    plan = build_plan(inventory("nvidia-pd-nixl", k3_front_door=False, k3_api_key=[KEY, "sk-k3-other"]))
    assert plan["endpoint"]["service"] == "router" and "backend" not in plan["endpoint"]
    assert not [s for d in plan["hosts"].values() for s in d["services"] if s["kind"] == "front_door"]


def test_the_settings_reach_the_configuration():
    plan = build_plan(
        inventory(
            "nvidia-pd-nixl",
            k3_front_door_port=9443,
            k3_front_door_max_body="2GB",
            k3_front_door_client_connections=0,
            k3_front_door_client_rate=7,
            k3_front_door_client_routes=["/v1/chat/completions", "/v1/responses"],
            k3_front_door_user="nginx",
        )
    )
    (svc,) = [s for d in plan["hosts"].values() for s in d["services"] if s["kind"] == "front_door"]
    content = svc["files"][0]["content"]
    assert "listen 9443;" in content and "user nginx;" in content
    assert "client_max_body_size %d;" % (2 << 30) in content
    assert "limit_conn " not in content and "rate=7r/s;" in content and "burst=14 nodelay;" in content
    assert "location = /v1/responses {" in content and "location = /v1/models {" not in content
    # No key at all: nobody is asked for one, and management stays on the router's own port.
    assert "default client;" in content and "include " not in content
    assert "secret_files" not in svc


@pytest.mark.parametrize(
    "values, host, variable, message",
    [
        ({"k3_api_key": KEY}, "all", "k3_admin_api_key", "the deployment has no admin key"),
        ({"k3_api_key": KEY, "k3_admin_api_key": [ADMIN, "sk-k3-2"]}, "all", "k3_admin_api_key", "is a list of 2"),
        ({"k3_api_key": [KEY, ADMIN], "k3_admin_api_key": ADMIN}, "all", "k3_admin_api_key", "also one of"),
        ({"k3_api_key": 'sk-k3-a"b', "k3_admin_api_key": ADMIN}, "all", "k3_api_key", "RFC 6750"),
        ({"k3_front_door_port": 8000}, "pd-router", "k3_router_port or k3_front_door_port", "port 8000 is used by"),
        ({"k3_front_door_client_routes": ["v1/chat"]}, "all", "k3_front_door_client_routes", "not well formed"),
        ({"k3_front_door_client_rate": -1}, "all", "k3_front_door_client_rate", "out of range"),
        ({"k3_front_door_max_body": "lots"}, "all", "k3_front_door_max_body", "is not a size"),
    ],
)
def test_a_mistake_around_the_front_door_is_refused(values, host, variable, message):
    text = problems(inventory("nvidia-pd-nixl", **values))
    lines = [line for line in text.splitlines() if line.startswith("host %s: %s: " % (host, variable))]
    assert lines and message in lines[0] and "Fix: " in lines[0], text
    assert KEY not in text and ADMIN not in text


def test_the_keys_file_matches_each_key_exactly():
    text = secret_file_content({"format": door.KEYS_FORMAT}, [KEY, "sk-k3.b+c/d=="], ADMIN)
    assert '"~^Bearer sk-k3-unit-door-client$" client;' in text
    assert '"~^Bearer sk-k3[.]b[+]c/d==$" client;' in text
    assert '"~^Bearer sk-k3-unit-door-admin$" admin;' in text
    assert 'default "Bearer sk-k3-unit-door-admin";' in text


def test_a_draft_in_the_models_own_folder_is_hidden_once_and_the_config_is_the_same_every_time():
    """The same folder for model and draft (the stand-in checkpoint): one replacement, the model's
    name, in a fixed order (a set's order changed the door's file between runs)."""
    params = {"model_path": "/m/k3/", "draft_model_path": "/m/k3", "served_model_name": "kimi-k3"}
    assert door.hidden_texts(params) == [("/m/k3", "kimi-k3")]
    params = {"model_path": "/m/a", "draft_model_path": "/m/bb", "served_model_name": "kimi-k3"}
    assert door.hidden_texts(params) == [("/m/bb", "draft"), ("/m/a", "kimi-k3")]
