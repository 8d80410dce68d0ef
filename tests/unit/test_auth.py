"""API keys in the plan: every component wired to k3_api_key and k3_admin_api_key, and no key
anywhere in the plan's output.

The keys below are made up for the test; each is searched for in everything the planner writes
(plan.json, summary.txt, the launch scripts) and in every refusal message. With the front door (on
by default) clients' keys stop there: the router, the proxy and the engines take the admin key only.
"""

from __future__ import annotations

import copy
import json

import pytest
from conftest import EXAMPLES, inventory_input

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._plan_auth import (
    router_launcher_source,
    vllm_guard_source,
)
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._plan_output import plan_files
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._plan_schema import validate_plan
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._planner import PlanError, build_plan

KEY = "sk-k3-unit-0a1b2c3d4e5f"
OTHER = "sk-k3-unit-rotated-9z8y7x"
ADMIN = "sk-k3-unit-admin-5q6r7s"


def with_key(name, key, admin=ADMIN, **extra):
    inv = copy.deepcopy(inventory_input(str(EXAMPLES / name / "hosts.yml")))
    for data in inv["hostvars"].values():
        data["k3_api_key"] = copy.deepcopy(key)
        if admin is not None:
            data["k3_admin_api_key"] = admin
        data.update(extra)
    return inv


def auth(keys):
    return {
        "api_key": True,
        "keys": keys,
        "variable": "k3_api_key",
        "admin_key": True,
        "admin_variable": "k3_admin_api_key",
    }


def services(plan):
    return [svc for data in plan["hosts"].values() for svc in data["services"]]


def written(plan):
    return "\n".join(plan_files(plan).values())


@pytest.mark.parametrize(
    "name", ["nvidia-pd-nixl", "nvidia-tp8", "mi355x-pd-1p1d-c8", "a3-pd-8p8d", "a2-mixed-8node", "nvidia-dep16"]
)
def test_no_key_in_anything_the_planner_writes(name):
    plan = build_plan(with_key(name, [KEY, OTHER]))
    validate_plan(plan)
    text = written(plan) + json.dumps(plan)
    assert KEY not in text and OTHER not in text and ADMIN not in text
    assert {k: v for k, v in plan["auth"].items() if k != "limits"} == auth(2)


def test_without_a_key_nothing_changes():
    plan = build_plan(copy.deepcopy(inventory_input(str(EXAMPLES / "nvidia-pd-nixl" / "hosts.yml"))))
    assert plan["auth"] == {
        "api_key": False,
        "keys": 0,
        "variable": "k3_api_key",
        "admin_key": False,
        "admin_variable": "k3_admin_api_key",
        "limits": {},
    }
    for svc in services(plan):
        assert "secret_env" not in svc and "secret_files" not in svc
        # Without keys the engines run the recipe's command as it is: no guard, no limits.
        assert "--middleware" not in svc["argv"] and "K3_REQUEST_LIMITS" not in svc["env"]
    router = next(s for s in services(plan) if s["kind"] == "router")
    assert router["argv"][0] == "vllm-router"


def test_behind_the_front_door_engines_and_router_take_the_admin_key_alone():
    plan = build_plan(with_key("nvidia-pd-nixl", [KEY, OTHER]))
    engines = [s for s in services(plan) if s["kind"] == "vllm"]
    assert engines
    for svc in engines:
        # primary: the deployment's own key (the admin key); no client key reaches them.
        assert svc["secret_env"] == {"VLLM_API_KEY": "primary", "K3_API_KEYS": "primary"}
        assert "secret_files" not in svc and "--config" not in svc["argv"]
        assert "VLLM_API_KEY" not in svc["env"] and "K3_API_KEYS" not in svc["env"]
        # vLLM's own check covers /v1 and a few prefixes: the guard puts the key on every route.
        assert svc["argv"][-2:] == ["--middleware", "k3_vllm_guard.KeyGuard"]
        assert svc["env"]["PYTHONPATH"] == "/etc/kimi-k3"
        guard = [f for f in svc["files"] if f["path"] == "/etc/kimi-k3/k3_vllm_guard.py"]
        assert guard and guard[0]["content"] == vllm_guard_source() and guard[0]["mode"] == "0644"
    router = next(s for s in services(plan) if s["kind"] == "router")
    assert router["secret_env"] == {"OPENAI_API_KEY": "primary", "K3_API_KEYS": "primary"}
    assert router["argv"][:2] == ["python3", "/etc/kimi-k3/vllm-router-auth.py"]
    assert "--vllm-pd-disaggregation" in router["argv"] and "--api-key" not in router["argv"]
    launcher = [f for f in router["files"] if f["path"] == "/etc/kimi-k3/vllm-router-auth.py"]
    assert launcher and launcher[0]["content"] == router_launcher_source()
    # The router runs in a container here: it sees the launcher through the configuration folder.
    assert router["runtime"] == "docker"
    assert "/etc/kimi-k3:/etc/kimi-k3:ro" in router["container"]["volumes"]


def test_without_a_front_door_several_keys_reach_vllm_through_a_config_file():
    plan = build_plan(with_key("nvidia-tp8", [KEY, OTHER], k3_front_door=False))
    assert plan["endpoint"]["service"] == "engine"
    node0 = next(s for s in services(plan) if s["serves_http"])
    path = "/etc/kimi-k3/%s.api-keys.yaml" % node0["name"]
    assert node0["secret_files"] == [{"path": path, "format": "vllm_config_api_keys"}]
    assert node0["argv"][-4:] == ["--config", path, "--middleware", "k3_vllm_guard.KeyGuard"]
    assert node0["secret_env"] == {"VLLM_API_KEY": "primary", "K3_API_KEYS": "all"}
    router = build_plan(with_key("nvidia-pd-nixl", KEY, k3_front_door=False))
    assert next(s for s in services(router) if s["kind"] == "router")["secret_env"]["K3_API_KEYS"] == "all"


def test_headless_followers_get_the_key_but_no_config_file():
    plan = build_plan(with_key("a2-mixed-8node", [KEY, OTHER]))
    followers = [s for s in services(plan) if s["kind"] == "vllm" and not s["serves_http"]]
    assert followers
    for svc in followers:
        assert svc["secret_env"] == {"VLLM_API_KEY": "primary"}
        assert "secret_files" not in svc and "--config" not in svc["argv"]
        assert "--middleware" not in svc["argv"] and "PYTHONPATH" not in svc["env"]
    # The A2 image's own PYTHONPATH is still put in front by the unit's shell set-up.
    node0 = next(s for s in services(plan) if s["kind"] == "vllm" and s["serves_http"])
    assert node0["env"]["PYTHONPATH"] == "/etc/kimi-k3"
    assert node0["shell"]["prepend"] == {"PYTHONPATH": "/vllm-workspace/vllm-ascend"}


def test_the_ascend_proxy_sends_the_key_to_the_engines():
    plan = build_plan(with_key("a3-pd-8p8d", KEY))
    proxy = next(s for s in services(plan) if s["kind"] == "proxy")
    assert proxy["secret_env"] == {"OPENAI_API_KEY": "primary"}


def test_the_summary_says_keys_are_required_without_showing_them():
    plan = build_plan(with_key("nvidia-pd-nixl", [KEY, OTHER]))
    summary = plan_files(plan)["summary.txt"]
    assert "API keys: required (2 client keys from k3_api_key; the admin key from k3_admin_api_key)" in summary
    scripts = {k: v for k, v in plan_files(plan).items() if k.startswith("scripts/")}
    engine = next(v for k, v in scripts.items() if "VLLM_API_KEY" in v)
    assert 'VLLM_API_KEY="${VLLM_API_KEY:?' in engine


@pytest.mark.parametrize(
    "value, message",
    [
        ("", "k3_api_key: is empty"),
        ([], "k3_api_key: is an empty list, not a key"),
        ("two words-" + KEY, "k3_api_key: has a space, a comma or a control character"),
        ([KEY, "a,b" + KEY], "k3_api_key: item 2 has a space, a comma or a control character"),
        ([KEY, KEY], "k3_api_key: lists one key twice"),
        ({"key": KEY}, "k3_api_key: is a dict, not a key"),
        ([KEY, 12345], "k3_api_key: item 2 is a int, not a text"),
    ],
)
def test_a_bad_key_is_refused_without_showing_it(value, message):
    with pytest.raises(PlanError) as exc:
        build_plan(with_key("nvidia-tp8", value))
    text = "\n".join(str(p) for p in exc.value.problems)
    assert message in text, text
    assert "set k3_api_key to a key (a text without spaces or commas)" in text
    assert KEY not in text


def test_hosts_with_different_keys_are_refused_without_showing_them():
    inv = with_key("nvidia-pd-nixl", KEY)
    first = sorted(inv["hostvars"])[0]
    inv["hostvars"][first]["k3_api_key"] = OTHER
    with pytest.raises(PlanError) as exc:
        build_plan(inv)
    text = "\n".join(str(p) for p in exc.value.problems)
    assert "host all: k3_api_key: the hosts of one deployment have different keys (2 different values)" in text
    assert KEY not in text and OTHER not in text
