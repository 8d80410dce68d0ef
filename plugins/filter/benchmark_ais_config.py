# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The benchmark_ais_config filter (its code: plugins/plugin_utils/filters/_benchmark.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._benchmark import Filters

DOCUMENTATION = r"""
name: benchmark_ais_config
version_added: 0.4.0
short_description: "The AISBench configuration file of a point, with the API key"
description:
  - >-
    The Python configuration file AISBench reads for an ais_bench point (its model: the endpoint,
    served model, concurrency, output length; its synthetic dataset: token-id prompts of the input
    length, with a common prefix of floor(repeat_rate * input_len) tokens for the prefix_cache
    dataset). AISBench takes the API key only from this file: write it 0600, in a task with no_log,
    and remove it after the run.
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "An ais_bench point of benchmark_points."
    type: dict
    required: true
  target:
    description: "The benchmark_target result."
    type: dict
    required: true
  api_key:
    description: "The deployment's API key (empty: none)."
    type: str
"""

EXAMPLES = r"""
- name: The configuration of a point
  ansible.builtin.copy:
    content: "{{ point | kimi_k3.serving.benchmark_ais_config(target, api_key) }}"
    dest: "{{ point.dir }}/ais_bench_config.py"
    mode: "0600"
  no_log: true
"""

RETURN = r"""
_value:
  description: "The text of the configuration file."
  type: str
"""


class FilterModule:
    """kimi_k3.serving.benchmark_ais_config."""

    def filters(self):
        return {"benchmark_ais_config": Filters().filters()["benchmark_ais_config"]}
