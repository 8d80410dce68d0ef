"""Replica groups and rolling batches (plugin_utils/operations/_rolling.py), from real example plans."""

from __future__ import annotations

import copy

import pytest
from conftest import example_names, example_plan

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations import _rolling as rolling


@pytest.mark.parametrize("name", example_names())
def test_every_engine_service_is_in_exactly_one_group_with_its_node0(name):
    plan = example_plan(name)
    groups = rolling.replica_groups(plan)
    members = [m for g in groups for m in g["members"]]
    engines = ["%s/%s" % (h, s["name"]) for h, d in plan["hosts"].items() for s in d["services"] if s["kind"] == "vllm"]
    assert sorted(members) == sorted(engines)
    for group in groups:
        assert group["members"][0] == group["id"]
        for member in group["members"][1:]:
            host, svc_name = member.split("/", 1)
            svc = next(s for s in plan["hosts"][host]["services"] if s["name"] == svc_name)
            assert svc["after_started"] == [group["id"]]


def test_a_data_parallel_engine_over_two_nodes_is_one_group():
    plan = example_plan("nvidia-dep16")
    groups = rolling.replica_groups(plan)
    assert len(groups) == 1 and len(groups[0]["hosts"]) > 1
    out = rolling.batches(groups, 1)
    assert out["batches"] == [[groups[0]["id"]]]
    assert len(out["outages"]) == 1 and "single replica group" in out["outages"][0]


def test_pd_groups_alternate_roles_and_name_their_front_door():
    plan = example_plan("mi355x-pd-1p3d-c24")
    groups = rolling.replica_groups(plan)
    roles = [g["role"] for g in groups]
    assert roles.count("prefill") == 1 and roles.count("decode") == 3
    out = rolling.batches(groups, 1)
    assert len(out["batches"]) == 4 and all(len(b) == 1 for b in out["batches"])
    # One prefill group: restarting it stops prefill, said before anything is touched.
    assert any("role prefill has a single replica group" in o for o in out["outages"])
    two = rolling.batches(groups, 3)
    assert not any("takes every decode group at once" in o for o in two["outages"])
    four = rolling.batches(groups, 4)
    assert any("takes every decode group at once" in o for o in four["outages"])


@pytest.mark.parametrize("serial", [0, -1, "2", True, 1.5])
def test_a_batch_size_that_is_not_a_whole_number_is_refused(serial):
    with pytest.raises(rolling.RollingError):
        rolling.batches([], serial)


def test_only_a_runtime_registering_router_gets_registrations():
    # The spec's static P/D router (flags as the recipe gives them) takes no registration.
    assert rolling.router_registrations(example_plan("nvidia-pd-nixl")) == []
    plan = copy.deepcopy(example_plan("nvidia-pd-nixl"))  # the example plans are shared: change a copy
    router_host = next(h for h, d in plan["hosts"].items() for s in d["services"] if s["kind"] == "router")
    router = next(s for s in plan["hosts"][router_host]["services"] if s["kind"] == "router")
    router["argv"] = router["argv"] + ["--enable-igw"]
    regs = rolling.router_registrations(plan, router_host)
    assert len(regs) == 1 and regs[0]["url"] == router["url"]
    kinds = {w["worker_type"] for w in regs[0]["workers"]}
    assert kinds == {"prefill", "decode"}
    assert {w["model_id"] for w in regs[0]["workers"]} == {plan["verify"]["served_model_name"]}
    assert len(regs[0]["workers"]) == len(list(router["after"]))
    assert rolling.router_registrations(plan, "no-such-host") == []
    listed = {"workers": [{"url": regs[0]["workers"][0]["url"], "worker_type": "prefill"}]}
    assert rolling.workers_to_add(listed, regs[0]["workers"]) == regs[0]["workers"][1:]
    assert rolling.workers_to_add(None, regs[0]["workers"]) == regs[0]["workers"]


def test_missing_workers_pairs_each_router_with_what_it_lacks():
    reg = {"router": "front/router", "url": "http://r:8000", "workers": [{"url": "http://p:1"}, {"url": "http://d:2"}]}
    results = [{"router_reg": reg, "json": {"workers": [{"url": "http://d:2"}], "total": 1}}]
    assert rolling.missing_workers(results) == [[reg, {"url": "http://p:1"}]]
    assert rolling.missing_workers([{"router_reg": reg, "json": {"workers": reg["workers"]}}]) == []


def test_front_actions_say_how_each_router_lets_go_of_a_group():
    static = example_plan("nvidia-pd-nixl")
    groups = rolling.replica_groups(static)
    decode = next(g for g in groups if g["role"] == "decode")
    actions = rolling.front_actions(static, [decode["id"]])
    assert actions and {a["mode"] for a in actions} == {"static"}
    assert actions[0]["worker_url"] == decode["url"] and "%3A%2F%2F" in actions[0]["worker_path"]
    assert actions[0]["model_id"] == static["verify"]["served_model_name"]
    assert any("fixed worker list" in o for o in rolling.front_outages(static, groups))
    members = rolling.replica_members(
        example_plan("nvidia-dep16"), [rolling.replica_groups(example_plan("nvidia-dep16"))[0]["id"]]
    )
    assert members[0]["node0"] and not any(m["node0"] for m in members[1:]) and len(members) > 1


def test_listed_models_reads_openai_and_runtime_router_answers():
    assert rolling.listed_models({"object": "list", "data": [{"id": "m1"}, {"id": "m2"}]}) == ["m1", "m2"]
    assert rolling.listed_models('{"models":["kimi-k3-sandbox"]}') == ["kimi-k3-sandbox"]
    assert rolling.listed_models("You must provide a valid API key.") == []
    assert rolling.listed_models(None) == [] and rolling.listed_models({"models": [3, "a"]}) == ["a"]


def test_the_members_a_restart_waits_on_carry_their_health_urls():
    from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations._units import health_targets

    plan = example_plan("nvidia-pd-nixl")
    groups = rolling.replica_groups(plan)
    members = rolling.replica_members(plan, [g["id"] for g in groups])
    targets = health_targets(members)
    assert targets and all(t["url"] and t["url"].endswith("/health") for t in targets)
    assert [t["url"] for t in targets] == [m["url"] for m in members]


def test_rolling_only_some_groups_keeps_the_others_of_their_role_serving():
    plan = example_plan("mi355x-pd-1p3d-c24")  # one prefill, three decode groups
    groups = rolling.replica_groups(plan)
    decodes = [g["id"] for g in groups if g["role"] == "decode"]
    prefill = [g["id"] for g in groups if g["role"] == "prefill"]
    one = rolling.batches(groups, 1, only=decodes[:1])
    assert one == {"batches": [decodes[:1]], "outages": []}
    # Two of three decode groups at once: the third serves.
    assert rolling.batches(groups, 2, only=decodes[:2])["outages"] == []
    assert any("every decode group" in o for o in rolling.batches(groups, 3, only=decodes)["outages"])
    assert any("single replica group" in o for o in rolling.batches(groups, 1, only=prefill)["outages"])
    assert rolling.batches(groups, 1, only=[]) == {"batches": [], "outages": []}
    with pytest.raises(rolling.RollingError, match="no replica group is called nowhere/x"):
        rolling.batches(groups, 1, only=["nowhere/x"])


def test_a_changed_follower_takes_its_whole_group_and_nothing_else():
    plan = example_plan("nvidia-dep16")
    group = rolling.replica_groups(plan)[0]
    follower_host, _unused, follower = group["members"][-1].partition("/")
    assert group["members"][-1] != group["id"]
    assert rolling.changed_groups(plan, {follower_host: [follower]}) == [group["id"]]
    assert rolling.changed_groups(plan, {follower_host: []}) == []
    assert rolling.changed_groups(plan, {"elsewhere": [follower]}) == []
    pd = example_plan("mi355x-pd-1p3d-c24")
    decode = [g for g in rolling.replica_groups(pd) if g["role"] == "decode"][1]
    host, _unused, name = decode["id"].partition("/")
    assert rolling.changed_groups(pd, {host: [name]}) == [decode["id"]]


def test_removing_a_node_takes_its_groups_and_names_what_would_stop():
    pd = example_plan("mi355x-pd-1p3d-c24")
    groups = rolling.replica_groups(pd)
    decode = [g for g in groups if g["role"] == "decode"][2]
    prefill = [g for g in groups if g["role"] == "prefill"][0]
    out = rolling.node_removal(pd, decode["hosts"])
    assert out == {"groups": [decode["id"]], "hosts": decode["hosts"], "outages": []}
    only_prefill = rolling.node_removal(pd, prefill["hosts"][:1])
    assert only_prefill["groups"] == [prefill["id"]]
    assert only_prefill["outages"] == [
        "removing %s leaves no prefill engine: the deployment stops serving" % ", ".join(prefill["hosts"])
    ]
    # A follower of a multi-node engine takes the whole engine, node 0 included.
    dep = example_plan("nvidia-dep16")
    engine = rolling.replica_groups(dep)[0]
    whole = rolling.node_removal(dep, [engine["hosts"][-1]])
    assert whole["groups"] == [engine["id"]] and whole["hosts"] == engine["hosts"]
    router_host = next(h for h, d in pd["hosts"].items() if any(s["kind"] == "router" for s in d["services"]))
    with pytest.raises(rolling.RollingError, match="%s runs no engine of the plan" % router_host):
        rolling.node_removal(pd, [router_host])
    with pytest.raises(rolling.RollingError, match="nobody: not in the inventory"):
        rolling.node_removal(pd, ["nobody"])
    with pytest.raises(rolling.RollingError, match="name the engine host"):
        rolling.node_removal(pd, [])
