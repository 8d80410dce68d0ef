"""Golden: the NVIDIA Blackwell examples carry the command builder's flags for Kimi-K3.

The spec leaves these commands to the builder; the expected flags below are
composed by hand from tests' reading of spec/reference/vllm-recipes/Kimi-K3.yaml
(base args, features, Blackwell overrides, strategy overrides, pd_cluster) and
the recipe page's notes, which win where the data is older (TOKENSPEED_MLA
prefill instead of flashinfer, --prefix-match-unit 128, all2all backend by
fabric, MNNVL env). Flags compare as a mapping (the builder's order is not
part of the spec; a flag given twice keeps its last value).
"""

from __future__ import annotations

import json

import pytest
from conftest import example_plan, service
from spec_runner import COMPILE_CACHE_ENV

SPEC = (
    '{"model":"/models/Kimi-K3-speculator.dspark","num_speculative_tokens":8,"method":"dspark",'
    '"draft_sample_method":"probabilistic","rejection_sample_method":"block"}'
)
BLACKWELL = {
    # model.base_args
    "--trust-remote-code": True,
    "--gpu-memory-utilization": "0.95",
    # features: tool_calling, reasoning, spec_decoding
    "--enable-auto-tool-choice": True,
    "--tool-call-parser": "kimi_k3",
    "--reasoning-parser": "kimi_k3",
    "--speculative-config": SPEC,
    # hardware_overrides.blackwell
    "--load-format": "fastsafetensors",
    "--no-enable-flashinfer-autotune": True,
    "--max-model-len": "1048576",
    "--kv-cache-dtype": "fp8",
    "--attention-config": '{"use_prefill_query_quantization":true,"mla_prefill_backend":"TOKENSPEED_MLA"}',
    "--enable-prefix-caching": True,
    # recipe notes: the decode pairing and the prefix-match unit
    "--attention-backend": "TOKENSPEED_MLA",
    "--prefix-match-unit": "128",
    # deployment
    "--served-model-name": "moonshotai/Kimi-K3",
    "--host": "0.0.0.0",
    "--port": "8000",
}
BLACKWELL_ENV = {
    "VLLM_ALLREDUCE_USE_FLASHINFER": "1",
    "VLLM_ENGINE_READY_TIMEOUT_S": "3600",
    "VLLM_USE_V2_MODEL_RUNNER": "1",
    "VLLM_USE_RUST_FRONTEND": "1",
    # Not the builder's: the collection's compile caches on the host (spec_runner.COMPILE_CACHE_ENV).
    **COMPILE_CACHE_ENV,
}
NIXL = '{"kv_connector":"NixlConnector","kv_role":"%s","kv_load_failure_policy":"fail"}'
MNNVL = {"NCCL_MNNVL_ENABLE": "1", "NCCL_CUMEM_ENABLE": "1", "NCCL_NVLS_ENABLE": "1"}
IFNAME = {"GLOO_SOCKET_IFNAME": "eth0", "NCCL_SOCKET_IFNAME": "eth0"}


def flags(argv):
    """argv after `vllm serve MODEL` as {flag: value or True}; refuses a flag given twice."""
    assert argv[:3] == ["vllm", "serve", "/models/Kimi-K3"]
    out = {}
    i = 3
    while i < len(argv):
        flag = argv[i]
        assert flag.startswith("--") and flag not in out, (flag, argv)
        if i + 1 < len(argv) and not argv[i + 1].startswith("--"):
            out[flag] = argv[i + 1]
            i += 2
        else:
            out[flag] = True
            i += 1
    return out


def merged(*dicts, drop=()):
    out = {}
    for d in dicts:
        out.update(d)
    for key in drop:
        out.pop(key, None)
    return out


def test_tp8():
    svc = service(example_plan("nvidia-tp8"), "gb300-n0", "engine")
    assert flags(svc["argv"]) == merged(BLACKWELL, {"--tensor-parallel-size": "8"})
    assert svc["env"] == BLACKWELL_ENV
    assert svc["image"] == "vllm/vllm-openai:kimi-k3"
    assert {k: svc["container"][k] for k in ("gpus", "privileged", "ipc", "network")} == {
        "gpus": "all",
        "privileged": True,
        "ipc": "host",
        "network": "host",
    }


def test_tp8_dcp8_opt_in():
    svc = service(example_plan("nvidia-tp8-dcp8"), "gb300-n0", "engine")
    assert flags(svc["argv"]) == merged(
        BLACKWELL,
        {
            "--tensor-parallel-size": "8",
            # features.decode_context_parallelism
            "--decode-context-parallel-size": "8",
            "--dcp-comm-backend": "a2a",
            "--attention-backend": "TOKENSPEED_MLA",
            "--attention-config": '{"use_prefill_query_quantization":true,"mla_prefill_backend":"TRTLLM_RAGGED"}',
        },
    )
    # DIRECT_DCP knobs stay automatic unless pinned.
    assert not any(k.startswith("VLLM_USE_DIRECT_DCP") for k in svc["env"])


@pytest.mark.parametrize("rank", [0, 1])
def test_tep16(rank):
    plan = example_plan("nvidia-tep16")
    svc = service(plan, "gb300-n%d" % rank, "engine")
    want = merged(
        BLACKWELL,
        {
            "--tensor-parallel-size": "16",
            "--enable-expert-parallel": True,
            "--all2all-backend": "flashinfer_nvlink_one_sided",
            "--nnodes": "2",
            "--node-rank": str(rank),
            "--master-addr": "192.0.2.51",
        },
        {"--headless": True} if rank else {},
    )
    assert flags(svc["argv"]) == want
    assert svc["env"] == merged(IFNAME, MNNVL, BLACKWELL_ENV)
    assert svc["serves_http"] is (rank == 0)


@pytest.mark.parametrize("rank", [0, 1])
def test_tp8pp2(rank):
    svc = service(example_plan("nvidia-tp8pp2"), "b300-n%d" % rank, "engine")
    want = merged(
        BLACKWELL,
        {
            "--tensor-parallel-size": "8",
            "--pipeline-parallel-size": "2",
            # strategy_overrides.multi_node_tp_pp
            "--gpu-memory-utilization": "0.90",
            "--max-num-batched-tokens": "8192",
            "--nnodes": "2",
            "--node-rank": str(rank),
            "--master-addr": "192.0.2.51",
        },
        {"--headless": True} if rank else {},
        # DSpark is gated off multi_node_tp_pp (vllm-project/vllm#50098).
        drop=("--speculative-config",),
    )
    assert flags(svc["argv"]) == want
    assert svc["env"] == merged(
        IFNAME, MNNVL, BLACKWELL_ENV, {"NCCL_CUMEM_ENABLE": "1", "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS": "1800"}
    )


@pytest.mark.parametrize("rank", [0, 1])
def test_dep16(rank):
    svc = service(example_plan("nvidia-dep16"), "gb300-n%d" % rank, "engine")
    want = merged(
        BLACKWELL,
        {
            "--data-parallel-size": "16",
            "--data-parallel-size-local": "8",
            "--data-parallel-address": "192.0.2.51",
            "--data-parallel-rpc-port": "13345",
            "--data-parallel-start-rank": str(8 * rank),
            "--data-parallel-hybrid-lb": True,
            "--enable-expert-parallel": True,
            "--all2all-backend": "flashinfer_nvlink_one_sided",
            # strategy_overrides.multi_node_dep on GB200/GB300 (cross-node NVLink)
            "--moe-backend": "deep_gemm_mega_moe",
        },
    )
    assert flags(svc["argv"]) == want
    # Hybrid LB: every node serves HTTP.
    assert svc["serves_http"] is True


def test_pd_nixl_prefill_decode_router():
    plan = example_plan("nvidia-pd-nixl")
    pre = service(plan, "gb300-p0", "prefill")
    assert flags(pre["argv"]) == merged(
        BLACKWELL,
        {
            "--tensor-parallel-size": "8",
            "--enable-expert-parallel": True,
            "--port": "8001",
            "--kv-transfer-config": NIXL % "kv_producer",
            "--max-num-batched-tokens": "16384",
            "--no-disable-hybrid-kv-cache-manager": True,
        },
    )
    assert pre["env"] == merged(
        MNNVL,
        BLACKWELL_ENV,
        {
            "UCX_NET_DEVICES": "all",
            "VLLM_NIXL_SIDE_CHANNEL_PORT": "5557",
            "VLLM_NIXL_SIDE_CHANNEL_HOST": "192.0.2.61",
            "VLLM_SSM_CONV_STATE_LAYOUT": "DS",
            "UCX_TLS": "rc,cuda_copy",
            "VLLM_KIMI_K3_SHARD_SP_SHARED_EXPERT": "1",
        },
    )
    for rank, host in enumerate(["gb300-d0", "gb300-d1"]):
        dec = service(plan, host, "decode")
        want = merged(
            BLACKWELL,
            {
                "--port": "8002",
                "--data-parallel-size": "16",
                "--data-parallel-size-local": "8",
                "--data-parallel-address": "192.0.2.71",
                "--data-parallel-rpc-port": "13345",
                "--data-parallel-start-rank": str(8 * rank),
                "--enable-expert-parallel": True,
                "--all2all-backend": "flashinfer_nvlink_one_sided",
                "--kv-transfer-config": NIXL % "kv_consumer",
                "--compilation-config": '{"cudagraph_mode":"FULL_DECODE_ONLY"}',
                "--data-parallel-hybrid-lb": True,
                "--no-enable-prefix-caching": True,
                "--max-num-seqs": "8",
                "--max-num-batched-tokens": "32",
                "--no-disable-hybrid-kv-cache-manager": True,
                "--moe-backend": "deep_gemm_mega_moe",
            },
            drop=("--enable-prefix-caching",),
        )
        assert flags(dec["argv"]) == want
        assert dec["env"]["VLLM_NIXL_SIDE_CHANNEL_PORT"] == "5558"
        assert dec["env"]["VLLM_NIXL_SIDE_CHANNEL_HOST"] == "192.0.2.%d" % (71 + rank)
    router = service(plan, "pd-router", "router")
    assert router["argv"] == [
        "vllm-router",
        "--policy",
        "round_robin",
        "--vllm-pd-disaggregation",
        "--prefill",
        "http://192.0.2.61:8001",
        "--decode",
        "http://192.0.2.71:8002",
        "--decode",
        "http://192.0.2.72:8002",
        "--host",
        "0.0.0.0",
        "--port",
        "8000",
        "--intra-node-data-parallel-size",
        "1",
    ]
    # Static endpoints: the router starts once every engine is healthy.
    assert sorted(router["after"]) == ["gb300-d0/decode", "gb300-d1/decode", "gb300-p0/prefill"]


def test_nccl_dmabuf_fallback_and_rdma_fabric():
    import copy

    from conftest import EXAMPLES, inventory_input

    from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._planner import build_plan

    inv = copy.deepcopy(inventory_input(str(EXAMPLES / "nvidia-tep16" / "hosts.yml")))
    for hv in inv["hostvars"].values():
        hv.update(k3_fabric="rdma", k3_nccl_dmabuf=False)
    svc = build_plan(inv)["hosts"]["gb300-n1"]["services"][0]
    assert flags(svc["argv"])["--all2all-backend"] == "deepep_v2"
    assert svc["env"]["NCCL_DMABUF_ENABLE"] == "0"
    assert not set(MNNVL) & set(svc["env"])


def test_mi355x_aggregated_tp8_dcp8():
    svc = service(example_plan("mi355x-tp8-dcp8"), "mi355x-n0", "engine")
    got = flags(svc["argv"])
    assert got["--decode-context-parallel-size"] == "8"
    assert got["--dcp-comm-backend"] == "a2a"
    assert got["--attention-backend"] == "ROCM_AITER_MLA"
    assert json.loads(got["--attention-config"]) == {"mla_prefill_backend": "ROCM_AITER_FA"}
    assert got["--kv-cache-dtype"] == "fp8"
    assert svc["image"] == "vllm/vllm-openai-rocm:nightly-rocm100"
    assert svc["env"]["VLLM_ROCM_USE_AITER_MOE_SITUV2"] == "1"
    assert "VLLM_ROCM_USE_AITER_MOE_SITUV2_A8W4" not in svc["env"]
    assert {
        svc["env"][k]
        for k in ("VLLM_USE_DIRECT_DCP_A2A", "VLLM_USE_DIRECT_DCP_Q_GATHER", "VLLM_USE_DIRECT_DCP_KV_GATHER")
    } == {"0"}
    assert svc["env"]["VLLM_USE_BREAKABLE_CUDAGRAPH"] == "0"
    assert svc["container"]["devices"] == ["/dev/kfd", "/dev/dri", "/dev/infiniband"]
