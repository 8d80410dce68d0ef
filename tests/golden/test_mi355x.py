"""Golden: the MI355X P/D examples reproduce the recipe's kimi-k3-pd.sh and router command.

The expected argv/env come from running the spec's own script (copied byte for
byte in tests/golden/spec/) with a recording stand-in for vllm; for the rows of
the spec's concurrency table other than 1P1D c48 the script's values are
replaced by that row's numbers, typed in here from the table.
"""

from __future__ import annotations

import pytest
from conftest import example_plan, service
from spec_runner import COMPILE_CACHE_ENV, assert_same_argv, expected_env_from_plan, run_script, spec_text

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations import _units as units

# Topology, C, P max seqs, per-D max seqs, K, SSM, CPU offload, dense, G  (the spec's table)
TABLE = [
    ("mi355x-pd-1p1d-c48", 1, 48, 96, 96, 4, "bfloat16", True, 128, 240),
    ("mi355x-pd-1p2d-c24", 2, 24, 48, 24, 4, "bfloat16", True, 64, 120),
    ("mi355x-pd-1p2d-c48", 2, 48, 96, 48, 4, "bfloat16", True, 128, 240),
    ("mi355x-pd-1p3d-c24", 3, 24, 48, 16, 4, "bfloat16", True, 64, 120),
    ("mi355x-pd-1p1d-c8", 1, 8, 1, 1, 7, "float32", False, None, 8),
]


def spec_script(p_seqs, d_seqs, k, ssm, offload, dense, gmax):
    text = spec_text("mi355x_kimi-k3-pd.sh")
    prefill, decode = text.split("  decode)")
    prefill = prefill.replace("MAX_SEQS=96", "MAX_SEQS=%d" % p_seqs)
    decode = decode.replace("MAX_SEQS=96", "MAX_SEQS=%d" % d_seqs)
    if dense is None:
        decode = decode.replace('CAPTURES="$(seq -s, 1 128),$(seq -s, 130 10 240)"', 'CAPTURES="1,8"')
    else:
        decode = decode.replace(
            "$(seq -s, 1 128),$(seq -s, 130 10 240)",
            "$(seq -s, 1 %d),$(seq -s, %d 10 %d)" % (dense, dense // 10 * 10 + 10, gmax),
        )
    decode = decode.replace('\\"max_cudagraph_capture_size\\":240', '\\"max_cudagraph_capture_size\\":%d' % gmax)
    text = prefill + "  decode)" + decode
    text = text.replace('"num_speculative_tokens":4', '"num_speculative_tokens":%d' % k)
    text = text.replace("--mamba-ssm-cache-dtype bfloat16", "--mamba-ssm-cache-dtype %s" % ssm)
    if not offload:  # "remove prefill CPU offload (use MoRIIO alone)"
        text = text.replace('if [ "$ROLE" = prefill ]; then', "if false; then")
    if k == 7:  # c8: decode only, Model Runner v2 and the latency-specialized backend
        text = text.replace(
            "    KV_ROLE=kv_consumer\n", "    KV_ROLE=kv_consumer\n    export VLLM_USE_V2_MODEL_RUNNER=1\n"
        )
        text = text.replace(
            '--kv-transfer-config "$KV_CONFIG"',
            '--kv-transfer-config "$KV_CONFIG" $( [ "$ROLE" = decode ] && echo --additional-config ) '
            '$( [ "$ROLE" = decode ] && echo \'{"decode_backend":"latency_specialized"}\' )',
        )
    return text


SITE = {"SOCKET_IFNAME": "eth0", "RDMA_DEVICES": "rdma0,rdma1,rdma2,rdma3,rdma4,rdma5,rdma6,rdma7"}


@pytest.mark.parametrize("row", TABLE, ids=[r[0] for r in TABLE])
def test_workers_match_spec_script(row):
    name, n_decode, _c, p_seqs, d_seqs, k, ssm, offload, dense, gmax = row
    plan = example_plan(name)
    router_ip = service(plan, "mi355x-router", "router")["health"]["url"].split("//")[1].split(":")[0]
    workers = [("mi355x-p1", "prefill", "192.0.2.11")] + [
        ("mi355x-d%d" % (i + 1), "decode", "192.0.2.%d" % (12 + i)) for i in range(n_decode)
    ]
    assert len([h for h in plan["hosts"] if h.startswith("mi355x-d")]) == n_decode
    script = spec_script(p_seqs, d_seqs, k, ssm, offload, dense, gmax)
    for host, role, ip in workers:
        svc = service(plan, host, role)
        want = run_script(script, args=[role], env=dict(SITE, ROUTER_IP=router_ip, WORKER_IP=ip))
        assert_same_argv(svc["argv"], want["argv"])
        # The spec script's environment, and the collection's compile caches on top (nothing else).
        assert expected_env_from_plan(svc) == dict(want["env"], **COMPILE_CACHE_ENV)
        assert "%s/%s:/kimi-k3-cache" % ("/var/cache/kimi-k3", svc["name"]) in svc["container"]["volumes"]
        assert svc["after"] == ["mi355x-router/router"]
        assert svc["image"] == "vllm/vllm-openai-rocm:nightly"


@pytest.mark.parametrize("name", [r[0] for r in TABLE])
def test_router_matches_spec(name):
    plan = example_plan(name)
    svc = service(plan, "mi355x-router", "router")
    text = spec_text("mi355x_router.sh").replace(
        'docker run --rm --network host --entrypoint vllm-router "$ROUTER_IMAGE"', "vllm-router"
    )
    want = run_script(text)
    assert_same_argv(svc["argv"], want["argv"])
    assert svc["env"] == {}
    assert svc["image"] == "vllm/vllm-router:nightly"
    # The recipe's docker run line: --rm --network host --entrypoint vllm-router "$ROUTER_IMAGE".
    run = units.exec_start(svc, "docker", "/etc/kimi-k3/router.env")
    assert run[:2] == ["/usr/bin/docker", "run"] and "--rm" in run
    assert run[run.index("--network") + 1] == "host"
    assert run[run.index("--entrypoint") :][:3] == ["--entrypoint", "vllm-router", "vllm/vllm-router:nightly"]
    # Started before any worker.
    workers = [s for h in plan["hosts"].values() for s in h["services"] if s["kind"] == "vllm"]
    assert workers and all("mi355x-router/router" in s["after"] for s in workers)


def test_moriio_port_ranges():
    plan = example_plan("mi355x-pd-1p1d-c48")
    ports = {p["name"]: (p["port"], p["count"]) for p in service(plan, "mi355x-p1", "prefill")["ports"]}
    assert ports == {"http": (6100, 1), "moriio-handshake": (26000, 8), "moriio-notify": (27000, 8)}
    rports = {p["name"]: p["port"] for p in service(plan, "mi355x-router", "router")["ports"]}
    assert rports == {"http": 8000, "discovery": 36367}
