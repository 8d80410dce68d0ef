"""Golden: the A3 8P8D example reproduces the tutorial's engine templates, MetaService and proxy.

Each engine is what launch_online_dp.py starts for one local DP rank: the
template run with `<devices> <vllm-start-port + i> <dp-size> <dp-rank-start + i>
<dp-address> <dp-rpc-port> <tp-size>` (spec README). The templates are run from
tests/golden/spec/ with a recording stand-in for vllm.
"""

from __future__ import annotations

import pytest
from conftest import example_plan, service
from spec_runner import assert_same_argv, expected_env_from_plan, run_script, spec_text

PLAN = "a3-pd-8p8d"
SIDES = {
    # side: (fixture, hosts, first address octet, start port, rpc port, KV port)
    "prefill": ("a3_pd_prefill_template.sh", "a3pd-p%d", 20, 9000, 13389, 36000),
    "decode": ("a3_pd_decode_template.sh", "a3pd-d%d", 40, 9200, 13489, 36200),
}


def launch_online_dp_args(tp, local_rank, start_port, dp_size, rank_start, address, rpc_port):
    devices = ",".join(str(d) for d in range(local_rank * tp, local_rank * tp + tp))
    return [devices, start_port + local_rank, dp_size, rank_start + local_rank, address, rpc_port, tp]


@pytest.mark.parametrize("side", sorted(SIDES))
def test_engines_match_templates(side):
    fixture, pattern, octet, start_port, rpc_port, kv_port = SIDES[side]
    plan = example_plan(PLAN)
    address = "198.51.100.%d" % octet
    for rank in range(8):
        host = pattern % rank
        ip = "198.51.100.%d" % (octet + rank)
        svc = service(plan, host, side)
        subs = {
            "<KIMI_K3_MODEL_PATH>": "/root/.cache/Kimi-K3-w4a8",
            "<%s_NIC_NAME>" % side.upper(): "eth0",
            "<%s_LOCAL_IP>" % side.upper(): ip,
            "<PATH_TO_MMC_LOCAL_CONF>": "/etc/kimi-k3/mmc-local.conf",
        }
        args = launch_online_dp_args(16, 0, start_port, 8, rank, address, rpc_port)
        want = run_script(spec_text(fixture), args=args, substitutions=subs)
        assert_same_argv(svc["argv"], want["argv"])
        assert expected_env_from_plan(svc) == want["env"]
        spec_unset = [
            w for line in spec_text(fixture).splitlines() if line.startswith("unset ") for w in line.split()[1:]
        ]
        assert svc["shell"]["unset"] == spec_unset
        assert set(want["unset"]) <= set(svc["shell"]["unset"])
        ports = {p["name"]: (p["port"], p["count"]) for p in svc["ports"]}
        assert ports["kv"] == (kv_port, 16)
        assert ports["http"] == (start_port, 1)
        assert ("dp-rpc" in ports) is (rank == 0)


def test_metaservice_matches_tutorial_and_starts_first():
    plan = example_plan(PLAN)
    meta = service(plan, "a3pd-meta", "metaservice")
    want = run_script(
        spec_text("a3_metaservice.sh"), substitutions={"<PATH_TO_MMC_META_CONF>": "/etc/kimi-k3/mmc-meta.conf"}
    )
    assert meta["argv"] == want["argv"]
    assert meta["env"] == want["env"]
    assert meta["after"] == []
    conf = {f["path"]: f["content"] for f in meta["files"]}["/etc/kimi-k3/mmc-meta.conf"]
    assert "ock.mmc.meta_service_url = tcp://198.51.100.9:5000" in conf
    # mmc-local.conf of every prefill engine points at that MetaService; decode has none.
    for rank in range(8):
        pre = service(plan, "a3pd-p%d" % rank, "prefill")
        local = {f["path"]: f["content"] for f in pre["files"]}["/etc/kimi-k3/mmc-local.conf"]
        assert "ock.mmc.meta_service_url = tcp://198.51.100.9:5000" in local
        assert pre["after"] == ["a3pd-meta/metaservice"]
        assert pre["after_started"] == ([] if rank == 0 else ["a3pd-p0/prefill"])
        dec = service(plan, "a3pd-d%d" % rank, "decode")
        assert "files" not in dec and "MMC_LOCAL_CONFIG_PATH" not in dec["env"]


def test_proxy_lists_every_engine():
    plan = example_plan(PLAN)
    proxy = service(plan, "a3pd-proxy", "proxy")
    p_hosts = ["198.51.100.%d" % (20 + i) for i in range(8)]
    d_hosts = ["198.51.100.%d" % (40 + i) for i in range(8)]
    assert proxy["argv"] == [
        "python",
        "/vllm-workspace/vllm-ascend/examples/disaggregated_prefill_v1/load_balance_proxy_server_example.py",
        "--host",
        "0.0.0.0",
        "--port",
        "8000",
        "--prefiller-hosts",
        *p_hosts,
        "--prefiller-ports",
        *["9000"] * 8,
        "--decoder-hosts",
        *d_hosts,
        "--decoder-ports",
        *["9200"] * 8,
    ]
    assert len(proxy["after"]) == 16
