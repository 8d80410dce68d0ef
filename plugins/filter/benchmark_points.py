# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The benchmark_points filter (its code: plugins/plugin_utils/filters/_benchmark.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._benchmark import Filters

DOCUMENTATION = r"""
name: benchmark_points
version_added: 0.4.0
short_description: "The benchmark's points and the exact command of each"
description:
  - >-
    One point per AISBench scenario and per concurrency of each C(vllm bench serve) sweep (the
    scenarios are data: plugins/plugin_utils/data/benchmark_scenarios.yml). Lengths that do not
    fit the max model length less O(margin), the input counted 1 + O(expansion) times, are
    scaled down keeping their ratio (O(scale)), or refused.
  - >-
    Each point carries its folder on the load-generator host (C(dir)), its C(argv) (the tool run
    through C(/usr/bin/env -u) for every proxy variable, no API key in it) and, for AISBench, its
    configuration file without the API key (C(config)).
  - >-
    Refuses an unknown scenario, a concurrency that is not a whole number above 0, lengths that do
    not fit without scaling and a relative O(remote_dir), naming the setting.
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The benchmark_target result."
    type: dict
    required: true
  scenarios:
    description: "Names of the scenarios to run."
    type: list
    elements: str
    required: true
  sweep:
    description: "The sweep's concurrencies (empty: 1, 2, 4 ... up to the target's concurrency)."
    type: list
    elements: int
  margin:
    description: "Tokens kept free of the max model length (the chat template's own tokens)."
    type: int
    default: 64
  expansion:
    description: >-
      How much a prompt may grow when the server tokenizes it again, as a fraction: the input length
      is counted 1 + O(expansion) times when fitting the lengths.
    type: float
    default: 0.3
  scale:
    description: "Scale lengths that do not fit (false refuses them)."
    type: bool
    default: true
  overrides:
    description: "Per scenario, settings that replace the scenario's (e.g. {sweep: {input_len: 256}})."
    type: dict
  vllm_venv:
    description: "The virtualenv of vllm bench serve on the load-generator host."
    type: str
  ais_bench_venv:
    description: "The virtualenv of ais_bench on the load-generator host."
    type: str
  remote_dir:
    description: "The run's folder on the load-generator host (absolute)."
    type: str
    required: true
"""

EXAMPLES = r"""
- name: The spec's scenarios and a sweep
  ansible.builtin.set_fact:
    points: >-
      {{ target | kimi_k3.serving.benchmark_points(['spec-8k-1k', 'sweep'], vllm_venv='/opt/bench/vllm',
         ais_bench_venv='/opt/bench/aisbench', remote_dir='/var/tmp/bench/run1') }}
"""

RETURN = r"""
_value:
  description: "The points: name, scenario, tool, concurrency, lengths, requests, dir, argv, config."
  type: list
  elements: dict
"""


class FilterModule:
    """kimi_k3.serving.benchmark_points."""

    def filters(self):
        return {"benchmark_points": Filters().filters()["benchmark_points"]}
