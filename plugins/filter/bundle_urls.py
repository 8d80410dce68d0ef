# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The bundle_urls filter (its code: plugins/plugin_utils/filters/_units.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._units import Filters

DOCUMENTATION = r"""
name: bundle_urls
version_added: 0.3.0
short_description: "The HTTP snapshots of planned services a support bundle takes"
description:
  - >-
    Each service's health URL, the C(/metrics) page of every vLLM API server, and vllm-router's
    Prometheus page (its C(--prometheus-port), default 29000, read on the router's host).
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "Services of the plan."
    type: list
    elements: dict
    required: true
"""

EXAMPLES = r"""
- name: This host's part of the bundle
  kimi_k3.serving.support_bundle:
    host: "{{ inventory_hostname }}"
    dest: /tmp/k3-support.tar.gz
    urls: "{{ services | kimi_k3.serving.bundle_urls }}"
"""

RETURN = r"""
_value:
  description: "Mappings with name (the snapshot's file name) and url."
  type: list
  elements: dict
"""


class FilterModule:
    """kimi_k3.serving.bundle_urls."""

    def filters(self):
        return {"bundle_urls": Filters().filters()["bundle_urls"]}
