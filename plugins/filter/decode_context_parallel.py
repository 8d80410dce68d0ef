# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The decode_context_parallel filter (its code: plugins/plugin_utils/filters/_k3.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._k3 import Filters

DOCUMENTATION = r"""
name: decode_context_parallel
version_added: 0.1.0
short_description: "Decode-context-parallel settings for a TP size"
description:
  - >-
    Checks that the DCP size divides the tensor-parallel size and returns the attention backend,
    MLA prefill backend, comm backend and DIRECT_DCP environment that pair with it on the platform
    (blackwell or rocm).
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "Tensor-parallel size."
    type: int
    required: true
  dcp_size:
    description: "Decode-context-parallel size."
    type: int
    required: true
  platform:
    description: "blackwell or rocm."
    type: str
    required: true
  direct:
    description: "None leaves the DIRECT_DCP knobs automatic, true pins them to 1, false sets 0."
    type: bool
    required: false
"""

EXAMPLES = r"""
- name: DCP8 on an MI355X TP8 engine with the direct ops off
  ansible.builtin.debug:
    msg: "{{ 8 | kimi_k3.serving.decode_context_parallel(8, 'rocm', false) }}"
"""

RETURN = r"""
_value:
  description: "size, attention_backend, mla_prefill_backend, comm_backend and env."
  type: dict
"""


class FilterModule:
    """kimi_k3.serving.decode_context_parallel."""

    def filters(self):
        return {"decode_context_parallel": Filters().filters()["decode_context_parallel"]}
