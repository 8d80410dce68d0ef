"""Table tests for the recipes' formulas (plugins/plugin_utils/plan/_formulas.py)."""

from __future__ import annotations

import pytest

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _formulas as f


@pytest.mark.parametrize(
    "c,n,p,d",
    [
        # The spec's table rows ...
        (48, 1, 96, 96),
        (24, 2, 48, 24),
        (48, 2, 96, 48),
        (24, 3, 48, 16),
        # ... and beyond it: rounding up, more decode nodes than sequences.
        (25, 3, 50, 17),
        (1, 4, 2, 1),
        (100, 7, 200, 29),
        (64, 8, 128, 16),
    ],
)
def test_max_num_seqs(c, n, p, d):
    assert f.prefill_max_num_seqs(c) == p
    assert f.decode_max_num_seqs(c, n) == d


@pytest.mark.parametrize("c,k,g", [(48, 4, 240), (24, 4, 120), (8, 7, 64), (1, 0, 1), (32, 3, 128)])
def test_graph_max(c, k, g):
    assert f.decode_graph_max(c, k) == g


def seq(first, last, step=1):
    return list(range(first, last + 1, step))


@pytest.mark.parametrize(
    "g,dense,want",
    [
        # `$(seq -s, 1 128),$(seq -s, 130 10 240)`: the spec's c48 decode list.
        (240, None, seq(1, 128) + seq(130, 240, 10)),
        # c24 rows: dense 64, max 120.
        (120, None, seq(1, 64) + seq(70, 120, 10)),
        # G not a multiple of 10 still ends exactly at G.
        (125, None, seq(1, 64) + seq(70, 120, 10) + [125]),
        (64, None, seq(1, 64)),
        (1, None, [1]),
        (240, 200, seq(1, 200) + seq(210, 240, 10)),
        (245, 245, seq(1, 245)),
    ],
)
def test_capture_sizes(g, dense, want):
    got = f.cudagraph_capture_sizes(g, dense)
    assert got == want
    assert got[-1] == g
    assert got == sorted(set(got))


@pytest.mark.parametrize("g,dense", [(240, None), (120, None)])
def test_capture_sizes_match_spec_table_dense_and_max(g, dense):
    got = f.cudagraph_capture_sizes(g, dense)
    # The table: "D graph dense / max" 128/240 and 64/120.
    assert max(x for x in got if got.index(x) + 1 == x) == {240: 128, 120: 64}[g]


@pytest.mark.parametrize(
    "args,message",
    [
        ((240, 300), "exceeds the graph max"),
        ((0,), "at least 1"),
        (("abc",), "whole number"),
        ((240, 10, 0), "at least 1"),
    ],
)
def test_capture_sizes_refused(args, message):
    with pytest.raises(f.PlanValueError, match=message):
        f.cudagraph_capture_sizes(*args)


def test_explicit_capture_sizes():
    assert f.explicit_capture_sizes([1, 8]) == ([1, 8], 8)
    with pytest.raises(f.PlanValueError, match="strictly increasing"):
        f.explicit_capture_sizes([8, 1])
    with pytest.raises(f.PlanValueError, match="must not be empty"):
        f.explicit_capture_sizes([])


@pytest.mark.parametrize(
    "tp,dcp,platform,attn,prefill",
    [
        (8, 8, "blackwell", "TOKENSPEED_MLA", "TRTLLM_RAGGED"),
        (16, 16, "blackwell", "TOKENSPEED_MLA", "TRTLLM_RAGGED"),
        (16, 8, "blackwell", "TOKENSPEED_MLA", "TRTLLM_RAGGED"),
        (8, 8, "rocm", "ROCM_AITER_MLA", "ROCM_AITER_FA"),
        (8, 4, "rocm", "ROCM_AITER_MLA", "ROCM_AITER_FA"),
    ],
)
def test_dcp_pairs_backends(tp, dcp, platform, attn, prefill):
    out = f.decode_context_parallel(tp, dcp, platform)
    assert (out["size"], out["attention_backend"], out["mla_prefill_backend"], out["comm_backend"]) == (
        dcp,
        attn,
        prefill,
        "a2a",
    )
    assert out["env"] == {}


@pytest.mark.parametrize("direct,value", [(True, "1"), (False, "0")])
def test_dcp_direct_knobs(direct, value):
    env = f.decode_context_parallel(8, 8, "rocm", direct)["env"]
    assert env == {k: value for k in f.DIRECT_DCP_KNOBS}


def test_dcp_one_is_off_anywhere():
    assert f.decode_context_parallel(16, 1, "ascend") == {"size": 1, "env": {}}


@pytest.mark.parametrize(
    "tp,dcp,platform,message",
    [
        (8, 3, "rocm", "does not divide tensor-parallel size 8; use one of 1, 2, 4, 8"),
        (8, 16, "blackwell", "does not divide"),
        (16, 8, "ascend", "qualified on blackwell and rocm only"),
        (0, 1, "rocm", "at least 1"),
    ],
)
def test_dcp_refused(tp, dcp, platform, message):
    with pytest.raises(f.PlanValueError, match=message):
        f.decode_context_parallel(tp, dcp, platform)


@pytest.mark.parametrize("tp,heads,ok", [(8, 64, True), (16, 64, True), (3, 64, False), (128, 64, False), (2, 2, True)])
def test_tp_divides_heads(tp, heads, ok):
    if ok:
        assert f.check_divides_heads(tp, heads) == tp
    else:
        with pytest.raises(f.PlanValueError, match="does not divide the %d attention heads" % heads):
            f.check_divides_heads(tp, heads)


def test_data_parallel_layout_hybrid_ranks():
    layout = f.data_parallel_layout(["10.0.0.1", "10.0.0.2", "10.0.0.3"], 8, 13345)
    assert [e["dp_start_rank"] for e in layout] == [0, 8, 16]
    assert [e["dp_ranks"] for e in layout][2] == list(range(16, 24))
    assert {e["dp_size"] for e in layout} == {24}
    assert {e["dp_address"] for e in layout} == {"10.0.0.1"}
    assert [e["is_node0"] for e in layout] == [True, False, False]


def test_data_parallel_layout_refused():
    with pytest.raises(f.PlanValueError, match="at least one node"):
        f.data_parallel_layout([], 1, 1)
    with pytest.raises(f.PlanValueError, match="at least 1"):
        f.data_parallel_layout(["a"], 0, 1)


@pytest.mark.parametrize(
    "start,size,rank_start,local,tp,want",
    [
        # One rank per node (the A3 8P8D layout): all 16 devices, the start port.
        (9000, 8, 3, 1, 16, [(3, 9000, list(range(16)))]),
        # Two ranks of TP4 on one node: devices 0-3 and 4-7, consecutive ports.
        (7100, 4, 2, 2, 4, [(2, 7100, [0, 1, 2, 3]), (3, 7101, [4, 5, 6, 7])]),
    ],
)
def test_external_dp_ranks(start, size, rank_start, local, tp, want):
    got = f.external_dp_ranks(start, size, rank_start, local, tp)
    assert [(e["dp_rank"], e["port"], e["devices"]) for e in got] == want


def test_external_dp_ranks_overflow():
    with pytest.raises(f.PlanValueError, match="exceed the data-parallel size 8"):
        f.external_dp_ranks(9000, 8, 7, 2, 8)


@pytest.mark.parametrize(
    "need,have,ok",
    [
        (2399000000000, 3 * 1024**4, True),
        (2399000000000, 2 * 1024**4, False),
        (0, 1024, True),
        (2399000000000, None, True),
    ],
)
def test_cpu_offload(need, have, ok):
    if ok:
        f.check_cpu_offload(need, have)
    else:
        with pytest.raises(f.PlanValueError, match="does not fit"):
            f.check_cpu_offload(need, have)


def test_port_collisions():
    entries = [
        ("h1", "prefill", "http", 6100, 1),
        ("h1", "prefill", "moriio-handshake", 26000, 8),
        ("h1", "decode", "moriio-handshake", 26007, 8),
        ("h2", "decode", "http", 6100, 1),
    ]
    assert f.port_collisions(entries) == [("h1", 26007, ["prefill/moriio-handshake", "decode/moriio-handshake"])]
    assert f.port_collisions(entries[:2] + entries[3:]) == []


def test_metric_sum_reads_vllm_counters():
    from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability._metrics import metric_sum

    text = "\n".join(
        [
            "# HELP vllm:prompt_tokens_by_source_total Prompt tokens by source",
            "# TYPE vllm:prompt_tokens_by_source_total counter",
            'vllm:prompt_tokens_by_source_total{engine="0",model_name="m",source="external_kv_transfer"} 384.0',
            'vllm:prompt_tokens_by_source_total{engine="1",model_name="m",source="external_kv_transfer"} 16.0',
            'vllm:prompt_tokens_by_source_total{engine="0",model_name="m",source="local_compute"} 69.0',
            "vllm:num_requests_running 2",
            "garbage line",
        ]
    )
    name = "vllm:prompt_tokens_by_source_total"
    assert metric_sum(text, name, {"source": "external_kv_transfer"}) == 400.0
    assert metric_sum(text, name, {"source": "local_compute", "engine": "0"}) == 69.0
    assert metric_sum(text, name) == 469.0
    assert metric_sum(text, "vllm:num_requests_running") == 2.0
    assert metric_sum(text, "vllm:absent") == 0.0
    assert metric_sum("", name) == 0.0
