# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The cudagraph_capture_sizes filter (its code: plugins/plugin_utils/filters/_k3.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._k3 import Filters

DOCUMENTATION = r"""
name: cudagraph_capture_sizes
version_added: 0.1.0
short_description: "Decode CUDA-graph capture sizes"
description:
  - >-
    Dense sizes 1..D, then every O(step) (multiples of it) up to G, always ending exactly at G.
    For G=240 and D=128 this is C($(seq -s, 1 128),$(seq -s, 130 10 240)).
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The graph maximum G."
    type: int
    required: true
  dense_max:
    description: "The end D of the dense part. Default: the largest power of two not above G."
    type: int
    required: false
  step:
    description: "The step after the dense part."
    type: int
    required: false
"""

EXAMPLES = r"""
- name: The spec's c48 decode capture list
  ansible.builtin.debug:
    msg: "{{ 240 | kimi_k3.serving.cudagraph_capture_sizes(128) }}"
"""

RETURN = r"""
_value:
  description: "The cudagraph_capture_sizes list."
  type: list
"""


class FilterModule:
    """kimi_k3.serving.cudagraph_capture_sizes."""

    def filters(self):
        return {"cudagraph_capture_sizes": Filters().filters()["cudagraph_capture_sizes"]}
