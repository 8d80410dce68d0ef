# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The monitoring_files filter (its code: plugins/plugin_utils/observability/_monitoring_files.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._monitoring import Filters

DOCUMENTATION = r"""
name: monitoring_files
version_added: 0.1.0
short_description: "Every folder, file and unit of the monitoring stage, for the service_units module"
description:
  - "The targets (one file-based service discovery file per job, which Prometheus reads by itself), the alert
    rules and prometheus.yml (checked by promtool; a change reloads Prometheus) and the Grafana dashboards."
  - "In install mode with a password: the web configuration of Prometheus and Alertmanager (a bcrypt hash),
    the password file Prometheus reaches Alertmanager with, the TLS certificate, key and CA copied from where
    the site put them (group prometheus), and the ARGS line of each daemon's settings file (a change
    restarts it)."
  - "In install mode: Alertmanager's configuration (the receivers of monitoring_receivers, routed with
    continue, grouped by alert and host; checked by amtool; 0640, group prometheus; a change reloads it),
    named in Alertmanager's ARGS."
  - "Alertmanager's cluster: with two or more monitoring hosts (plan monitoring.hosts), TLS and a CA, each
    Alertmanager gossips with the others on its plan address, port 9094, over mutual TLS (the cluster TLS
    file demands a client certificate of the CA), and Prometheus sends every alert to each of them;
    otherwise no cluster listener at all (--cluster.listen-address=)."
  - "The units to run (install mode) and the key values the module masks (the password, the receivers'
    credentials)."
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The plan (hostvars['localhost']['k3_plan_result']['plan'])."
    type: dict
    required: true
  settings:
    description:
      - "The monitoring role's settings, without their monitoring_ prefix - mode, targets_dir, dashboards_dir,
        rules_file, config_file, scrape_interval, thresholds, alertmanagers, services, web_user, web_password,
        web_config_file, web_password_file, web_defaults_files, web_tls_cert, web_tls_key, web_tls_ca,
        receivers, route, alertmanager_config_file. A missing one is named in the error. Optional: host,
        this monitoring host's inventory name (its Alertmanager's place in the cluster)."
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Write the monitoring files and run Prometheus and Alertmanager
  kimi_k3.serving.service_units:
    directories: "{{ staged.directories }}"
    files: "{{ staged.files }}"
    start: "{{ staged.start }}"
    secrets: "{{ staged.secrets }}"
  vars:
    staged: "{{ plan | kimi_k3.serving.monitoring_files(settings) }}"
"""

RETURN = r"""
_value:
  description: "{directories: [{path, mode}], files: [{path, content | source | line, mode, group, service, change,
    secret, validate}], start: [{name, unit}], secrets: [str]}."
  type: dict
"""


class FilterModule:
    """kimi_k3.serving.monitoring_files."""

    def filters(self):
        return {"monitoring_files": Filters().filters()["monitoring_files"]}
