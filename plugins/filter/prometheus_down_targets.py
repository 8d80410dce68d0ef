# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The prometheus_down_targets filter (its code: plugins/plugin_utils/filters/_monitoring.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._monitoring import Filters

DOCUMENTATION = r"""
name: prometheus_down_targets
version_added: 0.1.0
short_description: "The plan's metrics targets that Prometheus does not scrape successfully"
description:
  - "Compares the plan's C(monitoring.targets) with Prometheus' active targets (C(data.activeTargets) of
    C(/api/v1/targets)), matched by the labels job (k3-vllm, k3-router, k3-metaservice), k3_host and k3_service."
  - "Each target that Prometheus has not discovered yet, or whose health is not up, is one line naming the host,
    the service, the URL and Prometheus' last scrape error."
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The plan (hostvars['localhost']['k3_plan_result']['plan'])."
    type: dict
    required: true
  active:
    description: "The activeTargets list of Prometheus' /api/v1/targets."
    type: list
    elements: dict
    required: true
"""

EXAMPLES = r"""
- name: Prometheus scrapes every planned target
  ansible.builtin.uri:
    url: http://127.0.0.1:9090/api/v1/targets?state=active
  register: targets
  until: plan | kimi_k3.serving.prometheus_down_targets(targets.json.data.activeTargets) | length == 0
  retries: 15
  delay: 2
"""

RETURN = r"""
_value:
  description: >-
    One line per planned target that is missing or not up, e.g. 'k3-sb-decode/decode
    (http://10.77.0.15:8200/metrics): down (connection refused)'; empty when every target is up.
  type: list
  elements: str
"""


class FilterModule:
    """kimi_k3.serving.prometheus_down_targets."""

    def filters(self):
        return {"prometheus_down_targets": Filters().filters()["prometheus_down_targets"]}
