# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The decode_max_num_seqs filter (its code: plugins/plugin_utils/filters/_k3.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._k3 import Filters

DOCUMENTATION = r"""
name: decode_max_num_seqs
version_added: 0.1.0
short_description: "Per-decode-worker max-num-seqs"
description:
  - "The MI355X P/D recipe's formula: D max-num-seqs = ceil(2 * C / N) for N decode workers."
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "Global client concurrency C."
    type: int
    required: true
  decode_workers:
    description: "Number of decode workers N."
    type: int
    required: true
"""

EXAMPLES = r"""
- name: 16 for C=24 over three decode workers
  ansible.builtin.debug:
    msg: "{{ 24 | kimi_k3.serving.decode_max_num_seqs(3) }}"
"""

RETURN = r"""
_value:
  description: "Each decode worker's --max-num-seqs."
  type: int
"""


class FilterModule:
    """kimi_k3.serving.decode_max_num_seqs."""

    def filters(self):
        return {"decode_max_num_seqs": Filters().filters()["decode_max_num_seqs"]}
