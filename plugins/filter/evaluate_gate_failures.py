# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The evaluate_gate_failures filter (its code: plugins/plugin_utils/filters/_evaluate.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._evaluate import Filters

DOCUMENTATION = r"""
name: evaluate_gate_failures
version_added: 0.4.0
short_description: "The benchmarks that failed their gate, one message each"
description:
  - >-
    A benchmark fails when its run did not finish (the message gives the C(inspect eval-retry)
    command) or when its accuracy is under its gate. Each message names the benchmark, its score,
    the threshold and the log folder. A benchmark without a gate is reported, never failed.
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The results of kimi_k3.serving.evaluate_scores."
    type: list
    elements: dict
    required: true
  gates:
    description: "Benchmark to minimum accuracy (0 to 1)."
    type: dict
    required: true
  run_dir:
    description: "The run folder on the controller (each benchmark's logs are in a subfolder)."
    type: str
    required: true
  host:
    description: "Where inspect ran (named in the eval-retry hint when not the controller)."
    type: str
    default: localhost
"""

EXAMPLES = r"""
- name: Gates
  ansible.builtin.assert:
    that: failures | length == 0
    fail_msg: "{{ failures }}"
  vars:
    failures: "{{ scores | kimi_k3.serving.evaluate_gate_failures({'ocrbench': 0.8}, run_dir) }}"
"""

RETURN = r"""
_value:
  description: "The messages; empty when every benchmark passed."
  type: list
  elements: str
"""


class FilterModule:
    """kimi_k3.serving.evaluate_gate_failures."""

    def filters(self):
        return {"evaluate_gate_failures": Filters().filters()["evaluate_gate_failures"]}
