# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The recipes' arithmetic as plain functions (no Ansible imports).

Every function raises :class:`PlanValueError` with a message that names the
quantity and how to fix it; the planner adds the host and the variable.
"""

from __future__ import annotations


class PlanValueError(ValueError):
    """A value the recipes cannot run with."""


def _positive_int(name, value):
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            as_int = int(str(value), 10)
        except (TypeError, ValueError):
            raise PlanValueError("%s must be a whole number, got %r" % (name, value)) from None
        value = as_int
    if value < 1:
        raise PlanValueError("%s must be at least 1, got %d" % (name, value))
    return value


def _divisors(n):
    """The divisors of n, as the text of a fix."""
    return ", ".join(str(d) for d in range(1, n + 1) if n % d == 0)


# --------------------------------------------------------------------------
# Sequence limits and CUDA-graph capture sizes (MI355X P/D table)
# --------------------------------------------------------------------------
def prefill_max_num_seqs(concurrency):
    """P max-num-seqs = 2 * C."""
    return 2 * _positive_int("concurrency", concurrency)


def decode_max_num_seqs(concurrency, decode_workers):
    """D max-num-seqs = ceil(2 * C / N), per decode worker."""
    c = _positive_int("concurrency", concurrency)
    n = _positive_int("number of decode workers", decode_workers)
    return -(-2 * c // n)


def decode_graph_max(concurrency, draft_tokens):
    """D graph max G = (K + 1) * C."""
    c = _positive_int("concurrency", concurrency)
    k = int(draft_tokens)
    if k < 0:
        raise PlanValueError("draft tokens must be 0 or more, got %d" % k)
    return (k + 1) * c


def default_dense_max(graph_max):
    """The dense part of the capture list: the largest power of two <= G.

    The spec's table gives dense/max 128/240 (c48) and 64/120 (c24); this
    reproduces both and stays below G for every other G.
    """
    g = _positive_int("graph max", graph_max)
    return 1 << (g.bit_length() - 1)


def cudagraph_capture_sizes(graph_max, dense_max=None, step=10):
    """Dense sizes 1..D, then every ``step`` (multiples of it) up to G; always ends at G.

    ``cudagraph_capture_sizes(240, 128)`` is ``$(seq -s, 1 128),$(seq -s, 130 10 240)``.
    """
    g = _positive_int("graph max", graph_max)
    d = default_dense_max(g) if dense_max is None else _positive_int("dense capture max", dense_max)
    s = _positive_int("capture step", step)
    if d > g:
        raise PlanValueError("dense capture max %d exceeds the graph max %d; lower it to at most %d" % (d, g, g))
    sizes = list(range(1, d + 1))
    nxt = (d // s + 1) * s
    sizes.extend(range(nxt, g + 1, s))
    if sizes[-1] != g:
        sizes.append(g)
    return sizes


def explicit_capture_sizes(sizes):
    """Validate an explicit capture list (c8 preset: [1, 8]); returns (sizes, max)."""
    if not sizes:
        raise PlanValueError("an explicit capture size list must not be empty")
    out = [_positive_int("capture size", s) for s in sizes]
    if out != sorted(set(out)):
        raise PlanValueError("capture sizes must be strictly increasing, got %r" % (out,))
    return out, out[-1]


# --------------------------------------------------------------------------
# Decode context parallelism
# --------------------------------------------------------------------------
# The attention backend and MLA prefill backend that support DCP, per platform
# (recipe notes: TOKENSPEED_MLA + TRTLLM_RAGGED on Blackwell; ROCM_AITER_MLA +
# ROCM_AITER_FA on MI355X).
DCP_BACKENDS = {
    "blackwell": {"attention_backend": "TOKENSPEED_MLA", "mla_prefill_backend": "TRTLLM_RAGGED"},
    "rocm": {"attention_backend": "ROCM_AITER_MLA", "mla_prefill_backend": "ROCM_AITER_FA"},
}
DIRECT_DCP_KNOBS = ("VLLM_USE_DIRECT_DCP_A2A", "VLLM_USE_DIRECT_DCP_Q_GATHER", "VLLM_USE_DIRECT_DCP_KV_GATHER")


def decode_context_parallel(tensor_parallel_size, dcp_size, platform, direct=None):
    """Return the DCP settings for a TP size: backends, comm backend and DIRECT_DCP env.

    ``direct`` is None (knobs left to their automatic default), True (pin the
    direct ops, =1) or False (disable them, =0, as the MI355X cells do).
    """
    tp = _positive_int("tensor-parallel size", tensor_parallel_size)
    dcp = _positive_int("decode-context-parallel size", dcp_size)
    if tp % dcp:
        raise PlanValueError(
            "decode-context-parallel size %d does not divide tensor-parallel size %d; use one of %s"
            % (dcp, tp, _divisors(tp))
        )
    if dcp == 1:
        return {"size": 1, "env": {}}
    if platform not in DCP_BACKENDS:
        raise PlanValueError(
            "decode context parallelism is qualified on %s only, not on %s; set the DCP size to 1"
            % (" and ".join(sorted(DCP_BACKENDS)), platform)
        )
    backends = DCP_BACKENDS[platform]
    env = {}
    if direct is not None:
        env = {knob: "1" if direct else "0" for knob in DIRECT_DCP_KNOBS}
    return {
        "size": dcp,
        "attention_backend": backends["attention_backend"],
        "mla_prefill_backend": backends["mla_prefill_backend"],
        "comm_backend": "a2a",
        "env": env,
    }


def check_divides_heads(tensor_parallel_size, attention_heads):
    """TP size must divide the checkpoint's attention-head count."""
    tp = _positive_int("tensor-parallel size", tensor_parallel_size)
    heads = _positive_int("attention heads", attention_heads)
    if heads % tp:
        raise PlanValueError(
            "tensor-parallel size %d does not divide the %d attention heads; use one of %s"
            % (tp, heads, _divisors(heads))
        )
    return tp


# --------------------------------------------------------------------------
# Data parallelism
# --------------------------------------------------------------------------
def data_parallel_layout(nodes, local_size, rpc_port, address=None):
    """Ranks of a multi-node data-parallel engine.

    ``nodes`` is the node order (node 0 first); each node runs ``local_size``
    DP ranks. Returns one entry per node with its start rank, local ranks and
    whether it is node 0. ``address`` defaults to node 0's own address.
    """
    if not nodes:
        raise PlanValueError("a data-parallel engine needs at least one node")
    local = _positive_int("data-parallel size per node", local_size)
    _positive_int("data-parallel RPC port", rpc_port)
    total = local * len(nodes)
    out = []
    for index, node in enumerate(nodes):
        start = index * local
        out.append(
            {
                "node": node,
                "node_index": index,
                "is_node0": index == 0,
                "dp_size": total,
                "dp_size_local": local,
                "dp_start_rank": start,
                "dp_ranks": list(range(start, start + local)),
                "dp_address": address if address is not None else nodes[0],
                "dp_rpc_port": int(rpc_port),
            }
        )
    return out


def external_dp_ranks(start_port, dp_size, dp_rank_start, dp_size_local, tp_size):
    """The processes launch_online_dp.py starts on one node.

    For local rank i: devices i*tp .. i*tp+tp-1, port start_port + i and
    global rank dp_rank_start + i.
    """
    tp = _positive_int("tensor-parallel size", tp_size)
    local = _positive_int("data-parallel size per node", dp_size_local)
    size = _positive_int("data-parallel size", dp_size)
    if dp_rank_start + local > size:
        raise PlanValueError(
            "ranks %d..%d exceed the data-parallel size %d" % (dp_rank_start, dp_rank_start + local - 1, size)
        )
    out = []
    for i in range(local):
        out.append(
            {
                "local_rank": i,
                "dp_rank": dp_rank_start + i,
                "port": int(start_port) + i,
                "devices": list(range(i * tp, i * tp + tp)),
            }
        )
    return out


# --------------------------------------------------------------------------
# CPU offload
# --------------------------------------------------------------------------
def check_cpu_offload(offload_bytes, memory_bytes, reserve_fraction=0.1):
    """The CPU offload budget must fit the host's memory, leaving a reserve.

    The recipe: the offload budget comes in addition to weight-loading and
    runtime memory. ``memory_bytes`` None means unknown (not checked).
    """
    if offload_bytes in (None, 0):
        return 0
    need = _positive_int("CPU offload bytes", offload_bytes)
    if memory_bytes in (None, ""):
        return need
    have = _positive_int("host memory bytes", memory_bytes)
    limit = int(have * (1 - reserve_fraction))
    if need > limit:
        raise PlanValueError(
            "CPU offload of %d bytes does not fit %d bytes of host memory (at most %d, keeping %d%% for the "
            "weights and runtime); lower the offload bytes to %d or less"
            % (need, have, limit, int(reserve_fraction * 100), limit)
        )
    return need


# --------------------------------------------------------------------------
# Ports
# --------------------------------------------------------------------------
def port_collisions(entries):
    """Find ports used twice on one host.

    ``entries`` is an iterable of ``(host, owner, port_name, first_port, count)``;
    returns a list of ``(host, port, [owner/port_name, ...])`` for every port
    claimed more than once on the same host.
    """
    seen = {}
    for host, owner, name, first, count in entries:
        for port in range(int(first), int(first) + int(count)):
            seen.setdefault((host, port), []).append("%s/%s" % (owner, name))
    return [(host, port, users) for (host, port), users in sorted(seen.items()) if len(users) > 1]
