# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The prometheus_config filter (its code: plugins/plugin_utils/filters/_monitoring.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._monitoring import Filters

DOCUMENTATION = r"""
name: prometheus_config
version_added: 0.1.0
short_description: "A prometheus.yml for the deployment"
description:
  - "Scrape jobs k3-vllm, k3-router and k3-metaservice reading their targets from <targets_dir>/<job>.json
    (file-based service discovery: Prometheus notices a changed file without a reload), the rule files, and Alertmanager
    when given."
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The folder of the targets files."
    type: str
    required: true
  rules_files:
    description: "The rule files to load."
    type: list
    elements: str
    required: true
  alertmanagers:
    description: "host:port of each Alertmanager."
    type: list
    elements: str
    required: false
  scrape_interval:
    description: "Scrape and rule evaluation interval."
    type: str
    default: 15s
  ca_file:
    description: "CA bundle for engines that serve HTTPS."
    type: str
    required: false
  alertmanager_client:
    description: "How to reach the Alertmanagers behind credentials (basic_auth, scheme, tls_config):
      the alertmanager_client of kimi_k3.serving.prometheus_web_config."
    type: dict
    required: false
"""

EXAMPLES = r"""
- name: prometheus.yml, checked by promtool
  ansible.builtin.copy:
    content: "{{ '/etc/prometheus/kimi-k3' | kimi_k3.serving.prometheus_config(['/etc/prometheus/kimi-k3-rules.yml'],
      ['127.0.0.1:9093']) | to_nice_yaml }}"
    dest: /etc/prometheus/prometheus.yml
    mode: "0644"
    validate: promtool check config %s
"""

RETURN = r"""
_value:
  description: "The configuration as a mapping (global, rule_files, scrape_configs, alerting)."
  type: dict
"""


class FilterModule:
    """kimi_k3.serving.prometheus_config."""

    def filters(self):
        return {"prometheus_config": Filters().filters()["prometheus_config"]}
