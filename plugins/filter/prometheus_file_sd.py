# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The prometheus_file_sd filter (its code: plugins/plugin_utils/filters/_monitoring.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._monitoring import Filters

DOCUMENTATION = r"""
name: prometheus_file_sd
version_added: 0.1.0
short_description: "Prometheus file-based service discovery groups of the plan's metrics targets"
description:
  - "One group per target of the plan's C(monitoring.targets) (every vLLM API server, the router's Prometheus
    listener, the MetaService), keyed by job (vllm, router, metaservice): write each as <job>.json for a
    C(file_sd_configs) entry."
  - "Labels: k3_host, k3_service, k3_role, k3_unit, k3_profile; __scheme__ https for an engine with TLS."
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The plan (hostvars['localhost']['k3_plan_result']['plan'])."
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: One targets file per job
  ansible.builtin.copy:
    content: "{{ item.value | to_nice_json }}\n"
    dest: "/etc/prometheus/kimi-k3/{{ item.key }}.json"
    mode: "0644"
  loop: "{{ plan | kimi_k3.serving.prometheus_file_sd | dict2items }}"
"""

RETURN = r"""
_value:
  description: "{job: [{targets: [host:port], labels: {...}}]} for the jobs vllm, router and metaservice (a job without targets has an empty list)."
  type: dict
"""


class FilterModule:
    """kimi_k3.serving.prometheus_file_sd."""

    def filters(self):
        return {"prometheus_file_sd": Filters().filters()["prometheus_file_sd"]}
