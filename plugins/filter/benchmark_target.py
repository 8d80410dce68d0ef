# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The benchmark_target filter (its code: plugins/plugin_utils/filters/_benchmark.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._benchmark import Filters

DOCUMENTATION = r"""
name: benchmark_target
version_added: 0.4.0
short_description: "What the benchmark runs against and from which host"
description:
  - >-
    The endpoint URL, served model name, tokenizer (the model folder), max model length and
    load-generator host of the benchmark: each explicit setting, else the plan's (its front door
    C(endpoint.url) and C(endpoint.host), C(verify.served_model_name), C(parameters.model_path),
    C(parameters.max_model_len)). The sweep's top concurrency is O(concurrency), else the plan's
    C(k3_concurrency), else its C(max_num_seqs), else 8.
  - >-
    Refuses what it cannot tell (no plan and no setting), naming the variables to set, and an
    endpoint that is not an http(s) URL.
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The plan (C(k3_plan_result.plan)), or none when every setting is given."
    type: raw
    required: true
  host:
    description: "The load-generator host (default the plan's front-door host)."
    type: str
  endpoint:
    description: "The base URL requests go to (default the plan's endpoint URL)."
    type: str
  model:
    description: "The served model name (default the plan's)."
    type: str
  tokenizer:
    description: "The tokenizer the load generators count tokens with: the model folder on the load-generator host."
    type: str
  max_model_len:
    description: "The deployment's max model length (0: the plan's)."
    type: int
  concurrency:
    description: "The sweep's top concurrency (0: k3_concurrency of the plan, else max_num_seqs, else 8)."
    type: int
"""

EXAMPLES = r"""
- name: The target of the plan
  ansible.builtin.set_fact:
    target: "{{ hostvars['localhost']['k3_plan_result']['plan'] | kimi_k3.serving.benchmark_target }}"
"""

RETURN = r"""
_value:
  description: "host, url, model, tokenizer, max_model_len and concurrency."
  type: dict
"""


class FilterModule:
    """kimi_k3.serving.benchmark_target."""

    def filters(self):
        return {"benchmark_target": Filters().filters()["benchmark_target"]}
