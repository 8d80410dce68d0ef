"""Every bad-input rule: the planner refuses with one message naming host, variable and fix."""

from __future__ import annotations

import copy

import pytest
from conftest import EXAMPLES, inventory_input

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._planner import PlanError, build_plan


def example(name):
    return copy.deepcopy(inventory_input(str(EXAMPLES / name / "hosts.yml")))


def set_vars(inv, hosts, **values):
    for host in hosts:
        inv["hostvars"][host].update(values)
    return inv


def group(inv, name):
    return inv["groups"][name]


def problems(inv):
    with pytest.raises(PlanError) as err:
        build_plan(inv)
    return err.value.problems


def only(inv, host, variable, *needles):
    found = problems(inv)
    match = [p for p in found if p.host == host and p.variable == variable]
    assert match, "no problem for %s/%s in:\n%s" % (host, variable, "\n".join(map(str, found)))
    text = str(match[0])
    for needle in needles:
        assert needle in text, text
    assert "Fix:" in text and match[0].fix
    return found


def all_hosts(inv):
    return list(inv["hostvars"])


def test_examples_plan_cleanly():
    for path in sorted(EXAMPLES.iterdir()):
        plan = build_plan(inventory_input(str(path / "hosts.yml")))
        assert plan["hosts"], path.name


def test_unknown_profile():
    inv = set_vars(example("nvidia-tp8"), ["gb300-n0"], k3_profile="kimi-k3-nope")
    only(inv, "gb300-n0", "k3_profile", "unknown profile 'kimi-k3-nope'", "nvidia-tp8", "mi355x-pd-moriio")


def test_missing_profile():
    inv = example("nvidia-tp8")
    del inv["hostvars"]["gb300-n0"]["k3_profile"]
    only(inv, "gb300-n0", "k3_profile", "no profile selected")


def test_profiles_differ_between_hosts():
    inv = set_vars(example("nvidia-tep16"), ["gb300-n1"], k3_profile="nvidia-tp8")
    only(inv, "all", "k3_profile", "different profiles", "all.vars")


@pytest.mark.parametrize(
    "name,dcp,tp_text",
    [("mi355x-pd-1p1d-c48", 3, "tensor-parallel size 8"), ("nvidia-tp8", 16, "tensor-parallel size 8")],
)
def test_dcp_must_divide_tp(name, dcp, tp_text):
    inv = example(name)
    set_vars(inv, all_hosts(inv), k3_dcp_size=dcp)
    host = [h for h in all_hosts(inv) if "router" not in h][0]
    only(inv, host, "k3_dcp_size", "does not divide", tp_text, "divisor of k3_tensor_parallel_size")


def test_setting_the_profile_does_not_have():
    # DCP is not part of the Ascend profiles: the variable is refused, not ignored.
    inv = example("a3-mixed-4node")
    set_vars(inv, all_hosts(inv), k3_dcp_size=2)
    only(inv, "all", "k3_dcp_size", "profile ascend-a3-mixed has no setting k3_dcp_size", "k3_max_model_len")


def test_typo_in_variable():
    inv = set_vars(example("mi355x-pd-1p1d-c48"), ["mi355x-p1"], k3_concurency=64)
    only(inv, "mi355x-p1", "k3_concurency", "no such variable", "did you mean k3_concurrency?", "rename it to")


def test_tp_must_divide_attention_heads():
    inv = example("a2-mixed-8node")
    set_vars(inv, all_hosts(inv), k3_attention_heads=12)
    only(inv, "all", "k3_tensor_parallel_size", "does not divide the 12 attention heads", "1, 2, 3, 4, 6, 12")


def test_duplicate_node_rank():
    inv = example("a3-mixed-4node")
    for rank, host in enumerate(group(inv, "engine")):
        inv["hostvars"][host]["k3_node_rank"] = rank
    inv["hostvars"]["a3-n3"]["k3_node_rank"] = 1
    only(
        inv, "a3-n3", "k3_node_rank", "rank 1 of group engine is also held by a3-n1", "unique k3_node_rank from 0 to 3"
    )


def test_missing_node_rank():
    inv = example("a3-mixed-4node")
    inv["hostvars"]["a3-n0"]["k3_node_rank"] = 1
    inv["hostvars"]["a3-n1"]["k3_node_rank"] = 0
    only(inv, "a3-n2", "k3_node_rank", "a3-n2, a3-n3 does not", "free ranks: 2, 3")


def test_node_rank_out_of_range():
    inv = example("nvidia-tep16")
    inv["hostvars"]["gb300-n0"]["k3_node_rank"] = 0
    inv["hostvars"]["gb300-n1"]["k3_node_rank"] = 5
    only(inv, "gb300-n1", "k3_node_rank", "outside 0..1")


def test_node_rank_reorders_nodes():
    inv = example("a3-mixed-4node")
    for rank, host in enumerate(reversed(group(inv, "engine"))):
        inv["hostvars"][host]["k3_node_rank"] = rank
    plan = build_plan(inv)
    node0 = plan["hosts"]["a3-n3"]["services"][0]
    assert node0["ranks"]["dp_start_rank"] == 0 and "--headless" not in node0["argv"]
    assert plan["hosts"]["a3-n0"]["services"][0]["ranks"]["dp_start_rank"] == 3


@pytest.mark.parametrize(
    "name,host,role",
    [
        ("mi355x-pd-1p1d-c48", "mi355x-router", "vllm-router"),
        ("a3-pd-8p8d", "a3pd-meta", "memcache MetaService"),
        ("mi355x-pd-1p1d-c48", "mi355x-d1", "decode worker"),
    ],
)
def test_address_zero(name, host, role):
    inv = set_vars(example(name), [host], k3_ip="0.0.0.0")
    only(inv, host, "k3_ip", "the %s" % role, "0.0.0.0", "set k3_ip")


def test_loopback_address_in_multi_host_deployment():
    inv = set_vars(example("mi355x-pd-1p1d-c48"), ["mi355x-p1"], ansible_host="127.0.0.1")
    only(inv, "mi355x-p1", "ansible_host", "loopback")


def test_pd_profile_without_prefill_host():
    inv = example("mi355x-pd-1p1d-c48")
    inv["groups"]["prefill"] = []
    only(inv, "all", "groups.prefill", "needs at least 1 host(s) in group prefill", "prefill worker")


def test_router_group_holds_one_host():
    inv = example("mi355x-pd-1p1d-c48")
    inv["groups"]["router"] = ["mi355x-router", "mi355x-d1"]
    only(inv, "all", "groups.router", "needs 1 host(s) in group router")


def test_multinode_needs_its_node_count():
    inv = example("nvidia-tep16")
    inv["groups"]["engine"] = ["gb300-n0"]
    only(inv, "all", "groups.engine", "exactly 2")


def test_1m_context_needs_eight_nodes():
    inv = example("a3-mixed-1m-8node")
    inv["groups"]["engine"] = inv["groups"]["engine"][:4]
    only(inv, "all", "groups.engine", "at least 8")


def test_too_few_devices_per_node():
    inv = set_vars(example("nvidia-tp8"), ["gb300-n0"], k3_devices_per_node=4)
    only(inv, "gb300-n0", "k3_devices_per_node", "needs 8 devices per node", "has 4")


def test_aiter_a8w4_without_situv2():
    inv = example("mi355x-tp8-dcp8")
    set_vars(inv, ["mi355x-n0"], k3_env={"AITER_SITUV2_A8W4": "1", "VLLM_ROCM_USE_AITER_MOE_SITUV2": None})
    only(
        inv,
        "mi355x-n0",
        "k3_env.AITER_SITUV2_A8W4",
        "corrupt output without an error",
        "VLLM_ROCM_USE_AITER_MOE_SITUV2=1",
    )
    # With the toggle on, the same flag is accepted.
    set_vars(inv, ["mi355x-n0"], k3_env={"AITER_SITUV2_A8W4": "1"})
    build_plan(inv)


def test_hccl_aiv_forbidden_on_a2():
    inv = example("a2-mixed-8node")
    set_vars(inv, ["a2-n5"], k3_env={"HCCL_OP_EXPANSION_MODE": "AIV"})
    only(inv, "a2-n5", "k3_env.HCCL_OP_EXPANSION_MODE", "must not set", "remove HCCL_OP_EXPANSION_MODE")


def test_hccl_aiv_allowed_on_a3_decode():
    plan = build_plan(example("a3-pd-8p8d"))
    assert plan["hosts"]["a3pd-d0"]["services"][0]["env"]["HCCL_OP_EXPANSION_MODE"] == "AIV"


def test_cpu_offload_beyond_memory():
    inv = set_vars(example("mi355x-pd-1p1d-c48"), ["mi355x-p1"], k3_host_memory_bytes=2 * 1024**4)
    only(inv, "mi355x-p1", "k3_cpu_offload_bytes", "does not fit", "lower k3_cpu_offload_bytes")


def test_cpu_offload_checked_against_gathered_facts():
    inv = set_vars(example("mi355x-pd-1p1d-c48"), ["mi355x-p1"], ansible_memtotal_mb=1024 * 1024)
    only(inv, "mi355x-p1", "k3_cpu_offload_bytes", "does not fit")
    set_vars(inv, ["mi355x-p1"], ansible_memtotal_mb=3 * 1024 * 1024)
    build_plan(inv)


@pytest.mark.parametrize(
    "override,variable,key",
    [
        ({"k3_vllm_args": [{"--mamba-ssm-cache-dtype": "float32"}]}, "k3_vllm_args", "--mamba-ssm-cache-dtype"),
        ({"k3_vllm_args": [{"--decode-context-parallel-size": 4}]}, "k3_vllm_args", "--decode-context-parallel-size"),
        ({"k3_env": {"VLLM_KV_CACHE_LAYOUT": "NHD"}}, "k3_env.VLLM_KV_CACHE_LAYOUT", "VLLM_KV_CACHE_LAYOUT"),
        ({"k3_env": {"VLLM_SSM_CONV_STATE_LAYOUT": None}}, "k3_env.VLLM_SSM_CONV_STATE_LAYOUT", "(unset)"),
    ],
)
def test_prefill_decode_must_match(override, variable, key):
    inv = set_vars(example("mi355x-pd-1p2d-c48"), ["mi355x-d2"], **override)
    only(inv, "mi355x-d2", variable, key, "must keep SSM dtype, DCP settings and cache layout matched")


def test_port_collision_on_one_host():
    # Overlapping MoRIIO ranges: handshake 26000-26007 and notify 26004-26011.
    inv = example("mi355x-pd-1p1d-c48")
    set_vars(inv, all_hosts(inv), k3_notify_port=26004)
    found = only(
        inv,
        "mi355x-p1",
        "k3_handshake_port or k3_notify_port",
        "port 26004 is used by prefill/moriio-handshake and prefill/moriio-notify",
    )
    assert any(p.host == "mi355x-d1" for p in found)


def test_port_collision_between_colocated_services():
    inv = example("nvidia-pd-nixl")
    inv["groups"]["router"] = ["gb300-p0"]
    set_vars(inv, all_hosts(inv), k3_router_port=8001)
    found = only(inv, "gb300-p0", "k3_router_port or k3_prefill_port", "port 8001 is used by")
    assert {"prefill/http", "router/http"} <= set(str(found[0]).split("used by ")[1].split(". Fix")[0].split(" and "))


def test_megamoe_refused_on_rdma():
    inv = example("nvidia-dep16")
    set_vars(inv, all_hosts(inv), k3_fabric="rdma")
    # DEP on RDMA drops MegaMoE by itself; forcing it back is refused.
    build_plan(inv)
    set_vars(inv, ["gb300-n1"], k3_vllm_args=[{"--moe-backend": "deep_gemm_mega_moe"}])
    only(inv, "gb300-n1", "k3_fabric", "not compatible with cross-node RDMA")


def test_deployment_value_must_agree():
    inv = example("mi355x-pd-1p2d-c24")
    inv["hostvars"]["mi355x-d2"]["k3_concurrency"] = 48
    only(inv, "mi355x-router", "k3_concurrency", "must be the same on every host", "48 on mi355x-d2")


def test_several_problems_reported_together():
    inv = example("mi355x-pd-1p1d-c48")
    set_vars(inv, ["mi355x-router"], k3_ip="0.0.0.0")
    set_vars(inv, ["mi355x-p1"], k3_host_memory_bytes=10**9)
    found = problems(inv)
    assert {p.variable for p in found} >= {"k3_ip", "k3_cpu_offload_bytes"}


def test_no_hosts_at_all():
    only({"groups": {}, "hostvars": {}}, "all", "groups", "no host in any of the groups")


def test_explicit_capture_sizes_must_increase():
    inv = example("mi355x-pd-1p1d-c8")
    set_vars(inv, all_hosts(inv), k3_capture_sizes=[8, 1])
    only(inv, "mi355x-d1", "k3_capture_sizes", "capture sizes must be strictly increasing")


def test_cpu_offload_is_checked_only_where_an_engine_offloads():
    """Only the prefill engines hold the CPU offload connector: a decode node with less memory than
    k3_cpu_offload_bytes is no problem (the budget is the prefill's)."""
    inv = example("mi355x-pd-1p1d-c48")
    decode = [h for h in all_hosts(inv) if h.startswith("mi355x-d")]
    assert decode
    set_vars(inv, decode, k3_host_memory_bytes=1024**4)
    plan = build_plan(inv)
    assert "cpu_bytes_to_use" not in " ".join(plan["hosts"][decode[0]]["services"][0]["argv"])
