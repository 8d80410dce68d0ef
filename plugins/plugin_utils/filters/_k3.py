# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Filters over the recipes' formulas; the logic lives in plugin_utils/plan/_formulas.py."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._errors import filter_errors
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _formulas as formulas


def _wrap(func):
    return filter_errors(func, label=func.__name__)


class Filters:
    """kimi_k3.serving formula filters."""

    def filters(self):
        return {
            "prefill_max_num_seqs": _wrap(formulas.prefill_max_num_seqs),
            "decode_max_num_seqs": _wrap(formulas.decode_max_num_seqs),
            "decode_graph_max": _wrap(formulas.decode_graph_max),
            "cudagraph_capture_sizes": _wrap(formulas.cudagraph_capture_sizes),
            "decode_context_parallel": _wrap(formulas.decode_context_parallel),
            "data_parallel_layout": _wrap(formulas.data_parallel_layout),
            "external_dp_ranks": _wrap(formulas.external_dp_ranks),
            "check_cpu_offload": _wrap(formulas.check_cpu_offload),
        }
