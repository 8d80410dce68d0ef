# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The evaluate_runs filter (its code: plugins/plugin_utils/filters/_evaluate.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._evaluate import Filters

DOCUMENTATION = r"""
name: evaluate_runs
version_added: 0.4.0
short_description: "The inspect eval command line of each benchmark, from the evaluation settings"
description:
  - >-
    Validates the settings (unknown benchmarks, missing dataset paths, out-of-range sampling
    values, arguments the collection sets itself or that carry a key are refused with a message
    naming the variable) and returns one C(inspect eval) argv per benchmark with the
    specification's settings: the benchmark's max output tokens, 16 connections, temperature
    1.0, top-p 1.0, one epoch, reasoning effort max, streaming and the thinking switch, each
    overridable. The endpoint and key are not in the argv: they go in the environment
    (kimi_k3.serving.evaluate_environment and KIMI_API_KEY).
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: >-
      A mapping: benchmarks (list of ocrbench, mmmu_pro, toolcall), datasets (benchmark to local
      path), model (served name), inspect (the program), tasks (tasks.py), log_dir (the run
      folder on the evaluation host); optional max_tokens (benchmark to tokens),
      max_connections, temperature, top_p, epochs, reasoning_effort, stream, thinking,
      thinking_body, limit, extra_args, display.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: The commands of OCRBench and ToolCall
  ansible.builtin.set_fact:
    runs: >-
      {{ {'benchmarks': ['ocrbench', 'toolcall'], 'model': 'kimi-k3', 'inspect': '/opt/eval/bin/inspect',
          'tasks': '/srv/eval/kimi_evals/tasks.py', 'log_dir': '/srv/eval/run1',
          'datasets': {'ocrbench': '/data/OCRBench', 'toolcall': '/data/toolcall.jsonl'}}
         | kimi_k3.serving.evaluate_runs }}
"""

RETURN = r"""
_value:
  description: >-
    runs (a list of benchmark, title, log_dir, argv), max_tokens (benchmark to tokens), images
    (whether a selected benchmark sends images), extra_body (the thinking switch's request fields).
  type: dict
"""


class FilterModule:
    """kimi_k3.serving.evaluate_runs."""

    def filters(self):
        return {"evaluate_runs": Filters().filters()["evaluate_runs"]}
