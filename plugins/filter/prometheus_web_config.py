# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The prometheus_web_config filter (its code: plugins/plugin_utils/filters/_monitoring.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._monitoring import Filters

DOCUMENTATION = r"""
name: prometheus_web_config
version_added: 0.3.0
short_description: "Prometheus' and Alertmanager's web configuration: basic auth and TLS"
description:
  - >-
    The document both read with --web.config.file: the user's bcrypt hash of the password (a salt
    derived from the password and the user, so the same password gives the same file) and, with a
    certificate, TLS; and how Prometheus reaches an Alertmanager behind the same credentials. The
    password itself is in neither: Prometheus reads it from password_file. Use the result only in
    a task with C(no_log).
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The password (k3_monitoring_password), at most 72 bytes."
    type: str
    required: true
  user:
    description: "The basic-auth user."
    type: str
    required: true
  cert:
    description: "The certificate file on the monitoring host (empty: no TLS)."
    type: str
    required: false
  key:
    description: "Its key file."
    type: str
    required: false
  password_file:
    description: "The file Prometheus reads the password from to reach the Alertmanager."
    type: str
    required: false
  ca_file:
    description: "The CA Prometheus checks the Alertmanager's certificate against."
    type: str
    required: false
"""

EXAMPLES = r"""
- name: The web configuration
  ansible.builtin.copy:
    content: "{{ (k3_monitoring_password | kimi_k3.serving.prometheus_web_config('kimi-k3')).web | to_nice_yaml }}"
    dest: /etc/prometheus/kimi-k3-web.yml
    mode: "0640"
  no_log: true
"""

RETURN = r"""
_value:
  description: "web (the --web.config.file document) and alertmanager_client (for prometheus_config)."
  type: dict
"""


class FilterModule:
    """kimi_k3.serving.prometheus_web_config."""

    def filters(self):
        return {"prometheus_web_config": Filters().filters()["prometheus_web_config"]}
