# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The prefill_max_num_seqs filter (its code: plugins/plugin_utils/filters/_k3.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._k3 import Filters

DOCUMENTATION = r"""
name: prefill_max_num_seqs
version_added: 0.1.0
short_description: "Prefill max-num-seqs from the global concurrency"
description:
  - "The MI355X P/D recipe's formula: P max-num-seqs = 2 * C."
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "Global client concurrency C."
    type: int
    required: true
"""

EXAMPLES = r"""
- name: 96 for C=48
  ansible.builtin.debug:
    msg: "{{ 48 | kimi_k3.serving.prefill_max_num_seqs }}"
"""

RETURN = r"""
_value:
  description: "The prefill engine's --max-num-seqs."
  type: int
"""


class FilterModule:
    """kimi_k3.serving.prefill_max_num_seqs."""

    def filters(self):
        return {"prefill_max_num_seqs": Filters().filters()["prefill_max_num_seqs"]}
