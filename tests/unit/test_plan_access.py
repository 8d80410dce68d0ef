"""Reading a plan (plugins/plugin_utils/plan/_plan_access.py): a host's services, the version refusal,
node 0 restarts."""

from __future__ import annotations

import pytest
from conftest import example_names, example_plan

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _plan_access as plan_access
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._planner import PLAN_VERSION


def svc(name, *, kind="vllm", runtime="host", role=None, after_started=(), needs_engines=False, image=None):
    return {
        "name": name,
        "kind": kind,
        "runtime": runtime,
        "role": role or name,
        "unit": "k3-%s" % name,
        "image": image,
        "after_started": list(after_started),
        "needs_engines": needs_engines,
    }


def plan_of(hosts, version=PLAN_VERSION):
    return {"version": version, "hosts": {h: {"ip": "192.0.2.1", "services": s} for h, s in hosts.items()}}


# A deployment with every kind of service: a front host, P/D engines, a two-node DP engine.
PLAN = plan_of(
    {
        "front": [
            svc("metaservice", kind="metaservice"),
            svc("router", kind="router", needs_engines=False),
            svc("proxy", kind="proxy", needs_engines=True),
        ],
        "p0": [svc("prefill", runtime="docker", image="img:a")],
        "d0": [svc("decode", runtime="docker", image="img:a"), svc("decode-1", runtime="docker", image="img:b")],
        "n0": [svc("engine"), svc("engine-b", role="engine")],
        "n1": [
            svc("engine", after_started=["n0/engine"]),
            svc("engine-b", role="engine", after_started=["n0/engine-b"]),
        ],
        "empty": [],
    }
)


def names(services):
    return [s["name"] for s in services]


@pytest.mark.parametrize(
    ("host", "kwargs", "expected"),
    [
        ("front", {}, ["metaservice", "router", "proxy"]),
        ("front", {"kind": "metaservice"}, ["metaservice"]),
        ("front", {"kind": ["router", "proxy"]}, ["router", "proxy"]),
        ("front", {"kind": ["router", "proxy"], "needs_engines": False}, ["router"]),
        ("front", {"kind": ["router", "proxy"], "needs_engines": True}, ["proxy"]),
        ("front", {"kind": "vllm"}, []),
        ("d0", {"runtime": "docker"}, ["decode", "decode-1"]),
        ("d0", {"runtime": "host"}, []),
        ("d0", {"name": "decode-1"}, ["decode-1"]),
        ("n0", {"kind": "vllm", "role": "engine"}, ["engine", "engine-b"]),
        ("n0", {"kind": "vllm", "followers": False}, ["engine", "engine-b"]),
        ("n0", {"kind": "vllm", "followers": True}, []),
        ("n1", {"kind": "vllm", "followers": True}, ["engine", "engine-b"]),
        ("n1", {"followers": False}, []),
        ("empty", {}, []),
        # A host the plan does not know has nothing planned (e.g. a host of an unused group).
        ("elsewhere", {"kind": "vllm"}, []),
    ],
)
def test_host_services_filters(host, kwargs, expected):
    assert names(plan_access.host_services(PLAN, host, **kwargs)) == expected


def test_host_services_keeps_plan_order_and_returns_the_plan_entries():
    out = plan_access.host_services(PLAN, "d0")
    assert out[0] is PLAN["hosts"]["d0"]["services"][0]
    assert names(out) == ["decode", "decode-1"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": 3}, "kind: expected a string or a list of strings"),
        ({"runtime": ["docker", None]}, "runtime: expected a string or a list of strings"),
        ({"followers": "yes"}, "followers: expected true, false or none"),
    ],
)
def test_host_services_refuses_bad_filters(kwargs, message):
    with pytest.raises(plan_access.PlanAccessError, match=message):
        plan_access.host_services(PLAN, "n0", **kwargs)


@pytest.mark.parametrize("plan", [None, {}])
def test_a_missing_plan_says_run_the_plan_first(plan):
    with pytest.raises(plan_access.PlanAccessError) as exc:
        plan_access.host_services(plan, "n0")
    assert str(exc.value) == plan_access.PLAN_MISSING
    assert "run the plan first" in str(exc.value) and "\n" not in str(exc.value)


@pytest.mark.parametrize(
    ("version", "shown"),
    [(PLAN_VERSION + 1, repr(PLAN_VERSION + 1)), (0, "0"), ("1", "'1'"), (None, "none")],
)
def test_a_plan_of_another_version_is_refused_with_the_fix(version, shown):
    plan = dict(PLAN, version=version)
    if version is None:
        del plan["version"]
    for call in (lambda: plan_access.host_services(plan, "n0"), lambda: plan_access.node0_restarts(plan, "n0", {})):
        with pytest.raises(plan_access.PlanAccessError) as exc:
            call()
        text = str(exc.value)
        assert text.startswith("the plan has version %s; " % shown)
        assert "reads plans of version %d" % PLAN_VERSION in text
        assert "Fix: re-run the plan with this collection" in text


def test_not_a_mapping_is_refused():
    with pytest.raises(plan_access.PlanAccessError, match="not a mapping"):
        plan_access.host_services(["n0"], "n0")


def test_every_example_plan_is_readable_and_every_service_selected_once(plan_of):
    for name in example_names():
        plan = plan_of(name)
        for host, data in plan["hosts"].items():
            everything = plan_access.host_services(plan, host)
            assert everything == data["services"]
            by_kind = [
                s
                for k in ("vllm", "router", "proxy", "metaservice", "front_door", "exporter", "guard")
                for s in plan_access.host_services(plan, host, kind=k)
            ]
            assert sorted(names(by_kind)) == sorted(names(everything))
            split = plan_access.host_services(plan, host, followers=True) + plan_access.host_services(
                plan, host, followers=False
            )
            assert sorted(names(split)) == sorted(names(everything))


def result(*states):
    """What the systemctl is-active task registers."""
    return {
        "changed": False,
        "rc": 0 if all(s == "active" for s in states) else 3,
        "stdout": "\n".join(states),
        "stdout_lines": list(states),
    }


SKIPPED = {"changed": False, "skipped": True, "skip_reason": "Conditional result was False"}


@pytest.mark.parametrize(
    ("host", "states", "expected"),
    [
        # Every follower runs, or is on its way up: nothing restarts.
        ("n0", {"n1": result("active", "active")}, []),
        ("n0", {"n1": result("activating", "reloading")}, []),
        ("n0", {"n1": result("active", "unknown")}, []),
        # One follower down: only its own node 0 restarts.
        ("n0", {"n1": result("inactive", "active")}, ["engine"]),
        ("n0", {"n1": result("active", "failed")}, ["engine-b"]),
        ("n0", {"n1": result("failed", "deactivating")}, ["engine", "engine-b"]),
        # Only this host's node 0 services: n1 (the follower host) restarts none itself.
        ("n1", {"n1": result("inactive", "inactive")}, []),
        ("front", {"n1": result("inactive", "inactive")}, []),
        # Forms of the states: the registered result, its lines, its text.
        ("n0", {"n1": ["inactive", "active"]}, ["engine"]),
        ("n0", {"n1": "active\ninactive\n"}, ["engine-b"]),
        ("n0", {"n1": {"stdout": "inactive\nactive"}}, ["engine"]),
        # States not read (host outside --limit, task skipped, output cut short): no restart on a guess.
        ("n0", {}, []),
        ("n0", {"n1": SKIPPED}, []),
        ("n0", {"n1": None}, []),
        ("n0", {"n1": result("active")}, []),
        ("n0", {"n1": result("inactive")}, ["engine"]),
        # States of hosts without followers are ignored.
        ("n0", {"n0": result("inactive"), "n1": result("active", "active")}, []),
    ],
)
def test_node0_restarts(host, states, expected):
    assert plan_access.node0_restarts(PLAN, host, states) == expected


def test_node0_restarts_takes_the_states_preflight_read_where_the_engine_stage_read_none():
    # The engine stage skipped its own read (preflight's round trip read the same units).
    assert plan_access.node0_restarts(PLAN, "n0", {"n1": SKIPPED}, {"n1": ["inactive", "active"]}) == ["engine"]
    assert plan_access.node0_restarts(PLAN, "n0", {}, {"n1": ["active", "active"]}) == []
    # What the engine stage read itself wins.
    own = {"n1": result("active", "active")}
    assert plan_access.node0_restarts(PLAN, "n0", own, {"n1": ["failed", "failed"]}) == []
    with pytest.raises(plan_access.PlanAccessError, match="read_before"):
        plan_access.node0_restarts(PLAN, "n0", {}, ["inactive"])


def test_node0_restarts_pairs_states_with_vllm_followers_only():
    # A non-vllm service before the followers does not shift which state belongs to which follower.
    plan = plan_of(
        {
            "n0": [svc("engine")],
            "n1": [
                svc("sidecar", kind="metaservice", after_started=["n0/engine"]),
                svc("engine", after_started=["n0/engine"]),
            ],
        }
    )
    assert plan_access.node0_restarts(plan, "n0", {"n1": result("active")}) == []
    assert plan_access.node0_restarts(plan, "n0", {"n1": result("inactive")}) == ["engine"]


def test_node0_restarts_on_a_real_multi_node_plan():
    plan = example_plan("nvidia-tep16")
    followers = plan_access.host_services(plan, "gb300-n1", kind="vllm", followers=True)
    assert names(followers) == ["engine"]
    assert plan_access.node0_restarts(plan, "gb300-n0", {"gb300-n1": result("active")}) == []
    assert plan_access.node0_restarts(plan, "gb300-n0", {"gb300-n1": result("failed")}) == ["engine"]
    assert plan_access.node0_restarts(plan, "gb300-n1", {"gb300-n1": result("failed")}) == []


def test_node0_restarts_refuses_states_that_are_not_a_mapping():
    with pytest.raises(plan_access.PlanAccessError, match="follower_states"):
        plan_access.node0_restarts(PLAN, "n0", ["active"])
    assert plan_access.node0_restarts(PLAN, "n0", None) == []


def test_the_filter_shims_raise_ansible_filter_errors_naming_the_filter():
    from ansible.errors import AnsibleFilterError

    from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters import _host_services as shim

    filters = shim.Filters().filters()
    assert names(filters["host_services"](PLAN, "front", kind="router")) == ["router"]
    assert filters["node0_restarts"](PLAN, "n0", {"n1": ["failed", "active"]}) == ["engine"]
    with pytest.raises(AnsibleFilterError, match=r"^host_services: no plan: run the plan first"):
        filters["host_services"](None, "n0")
    with pytest.raises(AnsibleFilterError, match=r"^node0_restarts: the plan has version 9"):
        filters["node0_restarts"](dict(PLAN, version=9), "n0", {})
