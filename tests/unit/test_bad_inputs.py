"""Realistic operator mistakes across every profile: each refused, nothing written, host, variable and fix named.

Each row takes an example inventory exactly as Ansible resolves it, makes one mistake an
operator makes (a typo, a wrong type, an out-of-range number, a missing host variable, a
setting of another profile, a flag vLLM does not have ...) and expects the planner to refuse
it with a problem line naming the host (or ``all``), the exact variable to write, and a fix.
The plan is written the way the plan action writes it (``plan_output.write_files`` after
``build_plan``): a refusal leaves the plan folder absent. A sample of rows also goes through
the real ``ansible-playbook playbooks/plan.yml`` (refused, nothing written).
"""

from __future__ import annotations

import copy

import pytest
import yaml
from conftest import EXAMPLES, ROOT, inventory_input
from helpers.ansible_run import ansible_playbook

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._plan_output import plan_files, write_files
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._planner import PlanError, build_plan

ALL = object()  # every host of the inventory


def example(name):
    return copy.deepcopy(inventory_input(str(EXAMPLES / name / "hosts.yml")))


def hosts_of(inv, which):
    if which is ALL:
        return sorted(inv["hostvars"])
    return [which] if isinstance(which, str) else list(which)


def set_(which, **values):
    def change(inv):
        for host in hosts_of(inv, which):
            inv["hostvars"][host].update(copy.deepcopy(values))

    return change


def unset(which, *names):
    def change(inv):
        for host in hosts_of(inv, which):
            for name in names:
                inv["hostvars"][host].pop(name, None)

    return change


def group(name, members):
    def change(inv):
        inv["groups"][name] = list(members)

    return change


# (id, example, change(s), host named, variable named, text in the message)
CASES = [
    # --- NVIDIA Blackwell -------------------------------------------------------------------
    ("runtime-podman", "nvidia-tp8", set_(ALL, k3_runtime="podman"), "gb300-n0", "k3_runtime", "choices"),
    (
        "knob-typo",
        "nvidia-tp8",
        set_(ALL, k3_nvidia_driver_upgrad=True),
        "gb300-n0",
        "k3_nvidia_driver_upgrad",
        "did you mean k3_nvidia_driver_upgrade?",
    ),
    (
        "container-knob-typo",
        "nvidia-tp8",
        set_(ALL, k3_container_mange=False),
        "gb300-n0",
        "k3_container_mange",
        "did you mean k3_container_manage?",
    ),
    (
        "knob-not-bool",
        "nvidia-tp8",
        set_(ALL, k3_nvidia_driver_upgrade="maybe"),
        "gb300-n0",
        "k3_nvidia_driver_upgrade",
        "not true or false",
    ),
    ("knob-choice", "nvidia-tp8", set_(ALL, k3_container_source="snap"), "gb300-n0", "k3_container_source", "choices"),
    ("ip-name", "nvidia-tp8", set_("gb300-n0", k3_ip="node-a"), "gb300-n0", "k3_ip", "not an IP address"),
    ("ip-octet", "nvidia-tp8", set_("gb300-n0", k3_ip="10.0.0.300"), "gb300-n0", "k3_ip", "not an IP address"),
    (
        "ansible-host-dns",
        "nvidia-tp8",
        set_("gb300-n0", ansible_host="gb300-n0.example.com"),
        "gb300-n0",
        "k3_ip",
        "ansible_host is 'gb300-n0.example.com'",
    ),
    (
        "no-address-at-all",
        "nvidia-tp8",
        unset("gb300-n0", "ansible_host"),
        "gb300-n0",
        "k3_ip",
        "the host name 'gb300-n0'",
    ),
    ("port-zero", "nvidia-tp8", set_(ALL, k3_http_port=0), "gb300-n0", "k3_http_port", "out of range"),
    ("port-high", "nvidia-tp8", set_(ALL, k3_http_port=70000), "gb300-n0", "k3_http_port", "out of range"),
    ("port-text", "nvidia-tp8", set_(ALL, k3_http_port="eighty"), "gb300-n0", "k3_http_port", "not a whole number"),
    ("dcp-not-divisor", "nvidia-tp8", set_(ALL, k3_dcp_size=3), "gb300-n0", "k3_dcp_size", "does not divide"),
    (
        "flag-abbreviated",
        "nvidia-tp8",
        set_(ALL, k3_vllm_args=["--max-model"]),
        "gb300-n0",
        "k3_vllm_args",
        "abbreviation of --max-model-len",
    ),
    (
        "flag-misspelt",
        "nvidia-tp8",
        set_(ALL, k3_vllm_args=[{"--gpu-memory-utilisation": "0.9"}]),
        "gb300-n0",
        "k3_vllm_args",
        "--gpu-memory-utilization",
    ),
    (
        "flag-unknown",
        "nvidia-tp8",
        set_(ALL, k3_vllm_args=[{"--tokenizer-mode-v2": "auto"}]),
        "gb300-n0",
        "k3_vllm_args",
        "is not a vllm flag",
    ),
    (
        "args-not-list",
        "nvidia-tp8",
        set_(ALL, k3_vllm_args="--enforce-eager"),
        "gb300-n0",
        "k3_vllm_args",
        "not a list",
    ),
    (
        "args-no-dash",
        "nvidia-tp8",
        set_(ALL, k3_vllm_args=[{"max-model-len": 4096}]),
        "gb300-n0",
        "k3_vllm_args",
        "not a flag",
    ),
    ("env-list", "nvidia-tp8", set_(ALL, k3_env=["NCCL_DEBUG=INFO"]), "gb300-n0", "k3_env", "not a mapping"),
    (
        "env-bad-name",
        "nvidia-tp8",
        set_(ALL, k3_env={"nccl-debug": "INFO"}),
        "gb300-n0",
        "k3_env",
        "not an environment variable name",
    ),
    (
        "env-nested",
        "nvidia-tp8",
        set_(ALL, k3_env={"NCCL_DEBUG": {"level": "INFO"}}),
        "gb300-n0",
        "k3_env",
        "not a text",
    ),
    (
        "gpu-util-high",
        "nvidia-tp8",
        set_(ALL, k3_gpu_memory_utilization=1.5),
        "gb300-n0",
        "k3_gpu_memory_utilization",
        "out of range",
    ),
    (
        "gpu-util-text",
        "nvidia-tp8",
        set_(ALL, k3_gpu_memory_utilization="most"),
        "gb300-n0",
        "k3_gpu_memory_utilization",
        "not a number",
    ),
    ("max-len-negative", "nvidia-tp8", set_(ALL, k3_max_model_len=-1), "gb300-n0", "k3_max_model_len", "out of range"),
    (
        "too-few-gpus",
        "nvidia-tp8",
        set_(ALL, k3_devices_per_node=4),
        "gb300-n0",
        "k3_devices_per_node",
        "needs 8 devices",
    ),
    (
        "profile-typo",
        "nvidia-tp8",
        set_(ALL, k3_profile="nvidia-tp9"),
        "gb300-n0",
        "k3_profile",
        "did you mean nvidia-tp8?",
    ),
    ("profile-list", "nvidia-tp8", set_(ALL, k3_profile=["nvidia-tp8"]), "gb300-n0", "k3_profile", "unknown profile"),
    (
        "memory-fact",
        "nvidia-tp8",
        set_(ALL, ansible_memtotal_mb="lots"),
        "gb300-n0",
        "ansible_memtotal_mb",
        "not a memory size",
    ),
    ("fabric-unknown", "nvidia-tep16", set_(ALL, k3_fabric="infiniband"), "all", "k3_fabric", "choices"),
    ("nic-missing-multinode", "nvidia-tep16", unset("gb300-n1", "k3_nic"), "gb300-n1", "k3_nic", "k3_nic is not set"),
    (
        "nic-with-space",
        "nvidia-tep16",
        set_("gb300-n1", k3_nic="eth0 eth1"),
        "gb300-n1",
        "k3_nic",
        "not an interface name",
    ),
    (
        "same-address",
        "nvidia-tep16",
        set_(ALL, ansible_host="192.0.2.10"),
        "gb300-n1",
        "k3_ip",
        "has the address 192.0.2.10",
    ),
    (
        "node-rank-text",
        "nvidia-tep16",
        set_(ALL, k3_node_rank="first"),
        "all",
        "k3_node_rank",
        "not a whole number",
    ),
    (
        "node-rank-partial",
        "nvidia-tep16",
        set_("gb300-n0", k3_node_rank=1),
        "gb300-n1",
        "k3_node_rank",
        "set k3_node_rank",
    ),
    (
        "fabric-differs",
        "nvidia-tep16",
        set_("gb300-n1", k3_fabric="rdma"),
        "gb300-n0",
        "k3_fabric",
        "must be the same on every host",
    ),
    ("tep16-one-node", "nvidia-tep16", group("engine", ["gb300-n0"]), "all", "groups.engine", "exactly 2"),
    (
        "pp-zero",
        "nvidia-tp8pp2",
        set_(ALL, k3_pipeline_parallel_size=0),
        "all",
        "k3_pipeline_parallel_size",
        "out of range",
    ),
    (
        "speculative-text",
        "nvidia-tp8pp2",
        set_(ALL, k3_speculative="sometimes"),
        "all",
        "k3_speculative",
        "not true or false",
    ),
    (
        "megamoe-rdma",
        "nvidia-dep16",
        set_(ALL, k3_fabric="rdma", k3_vllm_args=[{"--moe-backend": "deep_gemm_mega_moe"}]),
        "all",
        "k3_fabric",
        "deep_gemm_mega_moe",
    ),
    ("dp-local-zero", "nvidia-dep16", set_(ALL, k3_dp_size_local=0), "all", "k3_dp_size_local", "out of range"),
    ("dp-rpc-port-high", "nvidia-dep16", set_(ALL, k3_dp_rpc_port=65536), "all", "k3_dp_rpc_port", "out of range"),
    (
        "router-flag-unknown",
        "nvidia-pd-nixl",
        set_("pd-router", k3_router_args=[{"--polcy": "round_robin"}]),
        "pd-router",
        "k3_router_args",
        "is not a vllm-router flag",
    ),
    (
        "router-flag-underscore",
        "nvidia-pd-nixl",
        set_("pd-router", k3_router_args=[{"--log_level": "info"}]),
        "pd-router",
        "k3_router_args",
        "--log-level",
    ),
    (
        "side-channel-on-http",
        "nvidia-pd-nixl",
        set_(ALL, k3_prefill_side_channel_port=8001),
        "gb300-p0",
        "k3_prefill_port or k3_prefill_side_channel_port",
        "port 8001 is used by",
    ),
    ("no-router-host", "nvidia-pd-nixl", group("router", []), "all", "groups.router", "in group router"),
    (
        "prefill-host-also-decode",
        "nvidia-pd-nixl",
        group("decode", ["gb300-d0", "gb300-d1", "gb300-p0"]),
        "gb300-p0",
        "groups.decode",
        "gb300-p0 is in groups prefill and decode",
    ),
    (
        "mixed-profiles",
        "nvidia-pd-nixl",
        set_("gb300-d1", k3_profile="nvidia-tp8"),
        "all",
        "k3_profile",
        "different profiles",
    ),
    # --- AMD MI355X -------------------------------------------------------------------------
    (
        "hca-missing",
        "mi355x-pd-1p1d-c48",
        unset("mi355x-p1", "k3_rdma_devices"),
        "mi355x-p1",
        "k3_rdma_devices",
        "k3_rdma_devices is not set",
    ),
    (
        "hca-empty-list",
        "mi355x-pd-1p1d-c48",
        set_("mi355x-p1", k3_rdma_devices=[]),
        "mi355x-p1",
        "k3_rdma_devices",
        "empty list",
    ),
    (
        "hca-empty-item",
        "mi355x-pd-1p1d-c48",
        set_("mi355x-p1", k3_rdma_devices="mlx5_0,,mlx5_1"),
        "mi355x-p1",
        "k3_rdma_devices",
        "empty item",
    ),
    (
        "nic-missing-rocm",
        "mi355x-pd-1p1d-c48",
        unset("mi355x-d1", "k3_nic"),
        "mi355x-d1",
        "k3_nic",
        "k3_nic is not set",
    ),
    (
        "concurrency-zero",
        "mi355x-pd-1p1d-c48",
        set_(ALL, k3_concurrency=0),
        "all",
        "k3_concurrency",
        "out of range",
    ),
    (
        "concurrency-typo",
        "mi355x-pd-1p1d-c48",
        set_(ALL, k3_concurency=64),
        "all",
        "k3_concurency",
        "did you mean k3_concurrency?",
    ),
    (
        "draft-negative",
        "mi355x-pd-1p1d-c48",
        set_(ALL, k3_draft_tokens=-1),
        "all",
        "k3_draft_tokens",
        "out of range",
    ),
    (
        "capture-empty",
        "mi355x-pd-1p1d-c48",
        set_(ALL, k3_capture_sizes=[]),
        "all",
        "k3_capture_sizes",
        "empty list",
    ),
    (
        "capture-text",
        "mi355x-pd-1p1d-c48",
        set_(ALL, k3_capture_sizes="1,8"),
        "all",
        "k3_capture_sizes",
        "not a list",
    ),
    (
        "capture-zero",
        "mi355x-pd-1p1d-c48",
        set_(ALL, k3_capture_sizes=[0, 8]),
        "all",
        "k3_capture_sizes",
        "below 1",
    ),
    ("ssm-dtype", "mi355x-pd-1p1d-c48", set_(ALL, k3_ssm_dtype="fp32"), "all", "k3_ssm_dtype", "choices"),
    (
        "offload-units",
        "mi355x-pd-1p1d-c48",
        set_(ALL, k3_cpu_offload_bytes="2.4TB"),
        "all",
        "k3_cpu_offload_bytes",
        "not a whole number",
    ),
    (
        "offload-beyond-memory",
        "mi355x-pd-1p1d-c48",
        set_("mi355x-p1", k3_host_memory_bytes=10**9),
        "mi355x-p1",
        "k3_cpu_offload_bytes",
        "host memory",
    ),
    (
        "ports-beyond-65535",
        "mi355x-pd-1p1d-c48",
        set_(ALL, k3_handshake_port=65530),
        "mi355x-p1",
        "k3_handshake_port",
        "beyond 65535",
    ),
    (
        "moriio-ranges-overlap",
        "mi355x-pd-1p1d-c48",
        set_(ALL, k3_notify_port=26004),
        "mi355x-p1",
        "k3_handshake_port or k3_notify_port",
        "port 26004",
    ),
    (
        "capture-decreasing",
        "mi355x-pd-1p1d-c8",
        set_(ALL, k3_capture_sizes=[8, 1]),
        "mi355x-d1",
        "k3_capture_sizes",
        "strictly increasing",
    ),
    (
        "concurrency-differs",
        "mi355x-pd-1p2d-c24",
        set_("mi355x-d2", k3_concurrency=48),
        "mi355x-router",
        "k3_concurrency",
        "must be the same on every host",
    ),
    (
        "decode-seqs-zero",
        "mi355x-pd-1p2d-c48",
        set_(ALL, k3_decode_max_num_seqs=0),
        "all",
        "k3_decode_max_num_seqs",
        "out of range",
    ),
    (
        "pd-ssm-mismatch",
        "mi355x-pd-1p3d-c24",
        set_("mi355x-d2", k3_vllm_args=[{"--mamba-ssm-cache-dtype": "float32"}]),
        "mi355x-d2",
        "k3_vllm_args",
        "prefill and decode must keep",
    ),
    (
        "node-rank-duplicate",
        "mi355x-pd-1p3d-c24",
        set_(["mi355x-d1", "mi355x-d2", "mi355x-d3"], k3_node_rank=0),
        "mi355x-d2",
        "k3_node_rank",
        "also held by",
    ),
    (
        "aiter-a8w4",
        "mi355x-tp8-dcp8",
        set_(ALL, k3_env={"AITER_SITUV2_A8W4": "1", "VLLM_ROCM_USE_AITER_MOE_SITUV2": None}),
        "mi355x-n0",
        "k3_env.AITER_SITUV2_A8W4",
        "VLLM_ROCM_USE_AITER_MOE_SITUV2",
    ),
    (
        "host-os-on-rocm",
        "mi355x-tp8-dcp8",
        set_(ALL, k3_host_os="ubuntu"),
        "mi355x-n0",
        "k3_host_os",
        "has no setting k3_host_os",
    ),
    ("address-unspecified", "mi355x-tp8-dcp8", set_(ALL, k3_ip="0.0.0.0"), "mi355x-n0", "k3_ip", "no other node"),
    # --- Huawei Ascend ----------------------------------------------------------------------
    ("host-os-unknown", "a3-mixed-4node", set_(ALL, k3_host_os="centos"), "all", "k3_host_os", "choices"),
    ("dcp-on-ascend", "a3-mixed-4node", set_(ALL, k3_dcp_size=2), "all", "k3_dcp_size", "has no setting"),
    ("nic-missing-ascend", "a3-mixed-4node", unset("a3-n2", "k3_nic"), "a3-n2", "k3_nic", "k3_nic is not set"),
    (
        "batched-tokens-text",
        "a3-mixed-4node",
        set_(ALL, k3_max_num_batched_tokens="24k"),
        "all",
        "k3_max_num_batched_tokens",
        "not a whole number",
    ),
    ("loopback-multinode", "a3-mixed-4node", set_("a3-n1", k3_ip="127.0.0.1"), "a3-n1", "k3_ip", "loopback"),
    (
        "rpc-port-on-http-port",
        "a3-mixed-4node",
        set_(ALL, k3_dp_rpc_port=8000),
        "a3-n0",
        "k3_http_port or k3_dp_rpc_port",
        "port 8000 is used by",
    ),
    (
        "variant-unknown",
        "a3-mixed-4node",
        set_(ALL, k3_variant="benchmark"),
        "all",
        "k3_variant",
        "profile ascend-a3-mixed has no variant 'benchmark'",
    ),
    (
        "variant-typo",
        "a3-mixed-4node",
        set_(ALL, k3_variant="performence"),
        "all",
        "k3_variant",
        "(did you mean performance?)",
    ),
    ("variant-list", "a3-mixed-4node", set_(ALL, k3_variant=["performance"]), "all", "k3_variant", "not a text"),
    ("variant-bool", "a3-mixed-4node", set_(ALL, k3_variant=True), "all", "k3_variant", "True is not a text"),
    (
        "variant-mapping",
        "a3-mixed-4node",
        set_(ALL, k3_variant={"name": "toolcall"}),
        "all",
        "k3_variant",
        "not a text",
    ),
    ("variant-empty", "a3-mixed-4node", set_(ALL, k3_variant=""), "all", "k3_variant", "is empty"),
    (
        "variant-number",
        "a3-mixed-4node",
        set_(ALL, k3_variant=2),
        "all",
        "k3_variant",
        "profile ascend-a3-mixed has no variant '2'",
    ),
    (
        "variant-differs",
        "a3-mixed-4node",
        set_("a3-n2", k3_variant="toolcall"),
        "a3-n0",
        "k3_variant",
        "must be the same on every host of the deployment",
    ),
    (
        "variant-on-a2",
        "a2-mixed-8node",
        set_(ALL, k3_variant="performance"),
        "all",
        "k3_variant",
        "profile ascend-a2-mixed has no variants (k3_variant is 'performance')",
    ),
    (
        "variant-not-inherited",
        "a3-mixed-1m-8node",
        set_(ALL, k3_variant="toolcall"),
        "all",
        "k3_variant",
        "profile ascend-a3-mixed-1m has no variants",
    ),
    (
        "1m-seven-nodes",
        "a3-mixed-1m-8node",
        group("engine", ["a3-n%d" % i for i in range(7)]),
        "all",
        "groups.engine",
        "at least 8",
    ),
    (
        "aiv-on-a2",
        "a2-mixed-8node",
        set_(ALL, k3_env={"HCCL_OP_EXPANSION_MODE": "AIV"}),
        "all",
        "k3_env.HCCL_OP_EXPANSION_MODE",
        "must not set",
    ),
    (
        "images-partial",
        "a2-mixed-8node",
        set_(ALL, k3_images={"ubuntu": "quay.io/ascend/vllm-ascend:kimi-k3"}),
        "all",
        "k3_images",
        "no openeuler",
    ),
    (
        "port-with-protocol",
        "a2-mixed-8node",
        set_(ALL, k3_http_port="8000/tcp"),
        "all",
        "k3_http_port",
        "not a whole number",
    ),
    (
        "proxy-flag-typo",
        "a3-pd-8p8d",
        set_("a3pd-proxy", k3_proxy_args=[{"--prefiler-hosts": "10.0.0.1"}]),
        "a3pd-proxy",
        "k3_proxy_args",
        "--prefiller-hosts",
    ),
    ("no-metaservice", "a3-pd-8p8d", group("metaservice", []), "all", "groups.metaservice", "in group metaservice"),
    (
        "start-port-differs",
        "a3-pd-8p8d",
        set_("a3pd-p3", k3_vllm_start_port=9050),
        "a3pd-p0",
        "k3_vllm_start_port",
        "prefill group",
    ),
    (
        "metaservice-on-metrics-port",
        "a3-pd-8p8d",
        set_(ALL, k3_metaservice_port=8088),
        "a3pd-meta",
        "k3_metaservice_port or k3_metaservice_metrics_port",
        "port 8088",
    ),
    ("dram-size-text", "a3-pd-8p8d", set_(ALL, k3_mmc_dram_size="lots"), "all", "k3_mmc_dram_size", "not a size"),
    ("log-level", "a3-pd-8p8d", set_(ALL, k3_mmc_log_level="verbose"), "all", "k3_mmc_log_level", "choices"),
    ("kv-port-range", "a3-pd-8p8d", set_(ALL, k3_kv_port=65530), "a3pd-p0", "k3_kv_port", "beyond 65535"),
    (
        "hostvars-garbage",
        "a3-pd-8p8d",
        lambda inv: inv["hostvars"].update({"a3pd-d3": ["k3_nic: eth0"]}),
        "a3pd-d3",
        "hostvars",
        "not a mapping",
    ),
    ("no-decode-host", "a3-pd-8p8d", group("decode", []), "all", "groups.decode", "in group decode"),
]


def refuse(inv, tmp_path):
    """Plan as the plan action does: a refusal raises before anything is written."""
    dest = tmp_path / "plan"
    with pytest.raises(PlanError) as err:
        plan = build_plan(inv)
        write_files(str(dest), plan_files(plan), check_mode=False)
    assert not dest.exists(), "a refused inventory wrote %s" % sorted(p.name for p in dest.rglob("*"))
    return err.value.problems


def test_the_table_is_large_and_covers_every_profile():
    assert len(CASES) >= 60
    assert len({c[0] for c in CASES}) == len(CASES), "case ids repeat"
    profiles = {example(c[1])["hostvars"][sorted(example(c[1])["hostvars"])[0]]["k3_profile"] for c in CASES}
    shipped = {p.stem for p in (ROOT / "profiles").glob("*.yml") if not p.name.startswith("_")}
    assert shipped - profiles <= {"sandbox-cpu", "sandbox-bench", "sandbox-ha", "mi355x-pd-moriio-c8"} | profiles


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_mistake_is_refused(case, tmp_path):
    _id, name, change, host, variable, needle = case
    inv = example(name)
    change(inv)
    found = refuse(inv, tmp_path)
    match = [p for p in found if p.host == host and p.variable == variable]
    assert match, "no problem for host %s, variable %s in:\n%s" % (host, variable, "\n".join(map(str, found)))
    text = str(match[0])
    assert needle in text, text
    assert match[0].fix and "Fix: " in text
    assert text.startswith("host %s: %s: " % (host, variable))


@pytest.mark.parametrize(
    "name,change",
    [
        ("a3-mixed-4node", set_(ALL, k3_runtime="host")),
        ("mi355x-tp8-dcp8", set_(ALL, k3_runtime="host")),
        ("nvidia-tp8", set_(ALL, k3_vllm_args=[{"--max_num_seqs": 8}, {"--enforce-eager": None}])),
        ("nvidia-tp8", set_(ALL, k3_nvidia_driver_upgrade=True, k3_nvidia_reboot="yes", k3_container_manage=False)),
        ("nvidia-tp8", set_(ALL, k3_http_port="8080")),
        ("mi355x-pd-1p1d-c48", set_(ALL, k3_rdma_devices="mlx5_0,mlx5_1")),
    ],
    ids=[
        "host-runtime-ascend",
        "host-runtime-rocm",
        "vllm-underscore-and-drop",
        "prerequisite-knobs",
        "ini-port",
        "hca-comma-text",
    ],
)
def test_right_inputs_still_plan(name, change):
    inv = example(name)
    change(inv)
    plan = build_plan(inv)
    assert plan["hosts"]


def test_unknown_variant_names_the_value_the_profile_and_its_variants(tmp_path):
    inv = example("a3-mixed-4node")
    set_(ALL, k3_variant="benchmark")(inv)
    (problem,) = refuse(inv, tmp_path)
    assert str(problem) == (
        "host all: k3_variant: profile ascend-a3-mixed has no variant 'benchmark'. Fix: set k3_variant to one of "
        "the variants of ascend-a3-mixed: performance, toolcall (or leave it unset for the profile as it stands) "
        "(every host has it: all.vars)"
    )


def test_variant_on_a_profile_without_variants_names_those_with_them(tmp_path):
    inv = example("nvidia-tp8")
    set_(ALL, k3_variant="performance")(inv)
    (problem,) = refuse(inv, tmp_path)
    assert (problem.host, problem.variable) == ("gb300-n0", "k3_variant")
    assert problem.message == "profile nvidia-tp8 has no variants (k3_variant is 'performance')"
    assert problem.fix == "remove k3_variant; the profiles with variants are: ascend-a3-mixed (performance, toolcall)"


@pytest.mark.parametrize("value", [None, "performance", "toolcall"])
def test_a_variant_or_null_plans(value):
    inv = example("a3-mixed-4node")
    set_(ALL, k3_variant=value)(inv)
    assert build_plan(inv)["variant"] == value


def test_host_runtime_is_planned_for_every_service():
    inv = example("a3-mixed-4node")
    set_(ALL, k3_runtime="host")(inv)
    plan = build_plan(inv)
    assert {s["runtime"] for h in plan["hosts"].values() for s in h["services"]} == {"host"}


SAMPLE = [
    "knob-typo",
    "hca-missing",
    "host-os-unknown",
    "ip-octet",
    "flag-abbreviated",
    "same-address",
    "variant-unknown",
]


@pytest.mark.parametrize("case_id", SAMPLE)
def test_real_plan_playbook_refuses_and_writes_nothing(case_id, tmp_path):
    """The same mistakes through ansible-playbook playbooks/plan.yml: failed, problem printed, no plan folder."""
    _id, name, change, host, variable, needle = next(c for c in CASES if c[0] == case_id)
    inv = example(name)
    change(inv)
    hosts = {}
    for gname, members in inv["groups"].items():
        if gname in ("all", "ungrouped") or not members:
            continue
        hosts[gname] = {"hosts": {h: dict(inv["hostvars"][h]) for h in members}}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": hosts}}))
    dest = tmp_path / "plan"
    proc = ansible_playbook(
        "playbooks/plan.yml", "-e", "k3_plan_dir=%s" % dest, inventory=tmp_path / "hosts.yml", check=False, timeout=300
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-3000:]
    assert "host %s: %s: " % (host, variable) in out, out[-3000:]
    assert not dest.exists()
