# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The prometheus_rules filter (its code: plugins/plugin_utils/filters/_monitoring.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._monitoring import Filters

DOCUMENTATION = r"""
name: prometheus_rules
version_added: 0.1.0
short_description: "The deployment's Prometheus alert rules"
description:
  - "K3ServiceDown (a target not scraped), K3TimeToFirstTokenHigh and K3InterTokenLatencyHigh (p99), K3KVCacheFull,
    K3RequestsWaiting, K3Preemptions and K3RouterFailedRequests, over the metric names the pinned vLLM and
    vllm-router expose."
  - "A second group on the hardware, over the real metric names of dcgm-exporter, AMD's device-metrics-exporter,
    the Ascend NPU Exporter and the node exporter: XID errors, row-remap failures, uncorrectable memory errors,
    NVLink errors and thermal slowdown (NVIDIA), GPU health and uncorrectable ECC (AMD), NPU health, network,
    link and HBM ECC (Ascend), RDMA ports down or counting errors, and filesystems nearly full."
  - "An unknown threshold, or a value of the wrong kind, fails naming it and the known ones."
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "Thresholds in place of the defaults: down_for, ttft_p99_seconds, itl_p99_seconds, kv_cache_usage,
      waiting_requests, waiting_for, preemptions_per_second, router_errors_per_second, disk_free_ratio, window."
    type: dict
    required: false
"""

EXAMPLES = r"""
- name: The rules file, checked by promtool before it replaces the old one
  ansible.builtin.copy:
    content: "{{ {'ttft_p99_seconds': 5} | kimi_k3.serving.prometheus_rules | to_nice_yaml(indent=2, width=1000) }}"
    dest: /etc/prometheus/kimi-k3-rules.yml
    mode: "0644"
    validate: promtool check rules %s
"""

RETURN = r"""
_value:
  description: "{groups: [{name: kimi-k3-serving, rules: [{alert, expr, for, labels, annotations}]}]}."
  type: dict
"""


class FilterModule:
    """kimi_k3.serving.prometheus_rules."""

    def filters(self):
        return {"prometheus_rules": Filters().filters()["prometheus_rules"]}
