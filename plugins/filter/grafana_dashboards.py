# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The grafana_dashboards filter (its code: plugins/plugin_utils/filters/_monitoring.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._monitoring import Filters

DOCUMENTATION = r"""
name: grafana_dashboards
version_added: 0.1.0
short_description: "Grafana dashboards (JSON) for the deployment's engines and router"
description:
  - "kimi-k3-engines.json (requests running and waiting, KV cache usage, TTFT p50/p99, inter-token and end-to-end
    latency, queue time, tokens per second, finished requests, prefix cache hit rate, preemptions, up) and
    kimi-k3-router.json (workers, worker health, requests, P/D duration p99, failed requests, up), with a
    datasource variable."
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The rate window of the panels' queries."
    type: str
    default: 5m
"""

EXAMPLES = r"""
- name: Dashboards for a Grafana that provisions them from a folder
  ansible.builtin.copy:
    content: "{{ item.value | to_nice_json }}\n"
    dest: "/var/lib/grafana/dashboards/{{ item.key }}"
    mode: "0644"
  loop: "{{ '5m' | kimi_k3.serving.grafana_dashboards | dict2items }}"
"""

RETURN = r"""
_value:
  description: "{file name: dashboard}."
  type: dict
"""


class FilterModule:
    """kimi_k3.serving.grafana_dashboards."""

    def filters(self):
        return {"grafana_dashboards": Filters().filters()["grafana_dashboards"]}
