# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The health_targets filter (its code: plugins/plugin_utils/filters/_units.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._units import Filters

DOCUMENTATION = r"""
name: health_targets
version_added: 0.1.0
short_description: "The name, unit and health URL of planned services"
description:
  - >-
    Reduces planned services to what kimi_k3.serving.service_health needs, so that no argv or
    environment (which may hold secrets) reaches a module's arguments.
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "Services of the plan."
    type: list
    elements: dict
    required: true
"""

EXAMPLES = r"""
- name: Wait for this host's services
  kimi_k3.serving.service_health:
    services: "{{ plan.hosts[inventory_hostname].services | kimi_k3.serving.health_targets }}"
"""

RETURN = r"""
_value:
  description: "One mapping per service with name, unit and url (null for headless services)."
  type: list
  elements: dict
"""


class FilterModule:
    """kimi_k3.serving.health_targets."""

    def filters(self):
        return {"health_targets": Filters().filters()["health_targets"]}
