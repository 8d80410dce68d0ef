#!/usr/bin/python
# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Documentation of the kimi_k3.serving.canary_gates action (the work: plugins/action/canary_gates.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: canary_gates
short_description: Judge an upgrade's canary against the groups still on the release before
version_added: 0.2.0
description:
  - A short benchmark - O(requests) streamed completions of O(max_tokens) tokens each (C(ignore_eos)), O(concurrency)
    at a time, straight to each canary group's engine and to each baseline group's - measured as the benchmark
    playbook measures (TTFT, ITL, end-to-end latency, output throughput), one point per role.
  - Each group first gets O(warmup) completions that are not measured (a restarted engine's first answers are
    slow). The measured completions go in rounds of O(concurrency) per group, the canary's groups and the
    baseline's taking turns, so that what else the hosts do during the probe weighs on both sides alike.
  - The benchmark's own gates judge the canary's points - O(thresholds) (failed requests, p99 TTFT, output
    throughput, a regression in percent against the baseline's point of the same role) and O(gates) in the
    benchmark's gate language. A role without a baseline group is judged on the absolute gates only.
  - Then, when O(prometheus) is given, no alert may fire for the canary's O(hosts) (their C(k3_host) label)
    during O(soak) seconds.
  - Runs on the controller only; probes nothing in check mode. Fails with every failed gate, one sentence each,
    and the canary's figures beside the baseline's; the key goes only into the requests' header.
options:
  canary:
    description: The canary's groups, each with C(role) and C(url) (its engine's API).
    type: list
    elements: dict
    required: true
  baseline:
    description: The groups of the same roles still on the release before, each with C(role) and C(url).
    type: list
    elements: dict
    default: []
  model:
    description: The served model's name.
    type: str
    required: true
  api_key:
    description: The bearer key the engines take. Never logged.
    type: str
    default: ""
  ca_path:
    description: The CA file of https engines; empty uses the system's CAs.
    type: str
    default: ""
  requests:
    description: Completions per group.
    type: int
    default: 8
  max_tokens:
    description: Tokens per completion.
    type: int
    default: 32
  concurrency:
    description: Completions in flight at once, per group.
    type: int
    default: 2
  warmup:
    description: Completions sent to each group before the probe and not measured; 0 sends none.
    type: int
    default: 4
  timeout:
    description: Seconds a completion may take.
    type: int
    default: 120
  thresholds:
    description:
      - The benchmark role's thresholds by their names without C(benchmark_) - C(max_failed), C(max_ttft_p99_ms),
        C(min_output_throughput), C(max_regression_percent) and C(regression_metrics); null leaves a gate out.
    type: dict
    default: {}
  gates:
    description: More gates, as C(benchmark_gates) takes them (C({metric, max | min | max_regression_percent})).
    type: list
    elements: dict
    default: []
  prometheus:
    description: Prometheus's API - C(url), C(user), C(password) (never logged), C(ca_path). Omitted - no alert soak.
    type: dict
  hosts:
    description: The canary's inventory hosts, whose alerts count.
    type: list
    elements: str
    default: []
  soak:
    description: Seconds during which no alert may fire for O(hosts) (0 - not watched).
    type: int
    default: 0
author: kimi_k3.serving maintainers (!UNKNOWN)
attributes:
  check_mode:
    support: full
    description: Nothing is sent in check mode.
  diff_mode:
    support: none
    description: No diff is shown.
  idempotent:
    support: full
    description: It only reads.
"""

EXAMPLES = r"""
- name: Judge the canary
  kimi_k3.serving.canary_gates:
    canary: [{role: decode, url: "http://10.0.0.5:8200"}]
    baseline: [{role: decode, url: "http://10.0.0.6:8200"}]
    model: kimi-k3
    api_key: "{{ key }}"
    thresholds: {max_failed: 0, max_regression_percent: 20, regression_metrics: [ttft_ms.p50, itl_ms.p50]}
  delegate_to: localhost
  no_log: true
"""

RETURN = r"""
canary:
  description: Role to the canary's point (the benchmark's normalised shape, plus C(errors), the first failed requests).
  type: dict
  returned: unless check mode
baseline:
  description: Role to the baseline's point.
  type: dict
  returned: unless check mode
lines:
  description: The canary's figures beside the baseline's, a line per role and metric.
  type: list
  elements: str
  returned: unless check mode
alerts:
  description: The alerts that fired for the canary's hosts during the soak.
  type: list
  elements: str
  returned: unless check mode
failures:
  description: Each failed gate, one sentence.
  type: list
  elements: str
  returned: unless check mode
"""
