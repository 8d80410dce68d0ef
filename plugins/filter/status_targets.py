# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The status_targets filter (its code: plugins/plugin_utils/filters/_units.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._units import Filters

DOCUMENTATION = r"""
name: status_targets
version_added: 0.3.0
short_description: "What the service_status module needs of planned services"
description:
  - >-
    Reduces planned services to name, unit, kind, runtime, argv and health, so that no environment
    reaches a module's arguments.
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "Services of the plan."
    type: list
    elements: dict
    required: true
"""

EXAMPLES = r"""
- name: Report on this host's services
  kimi_k3.serving.service_status:
    services: "{{ plan.hosts[inventory_hostname].services | kimi_k3.serving.status_targets }}"
"""

RETURN = r"""
_value:
  description: "One mapping per service with name, unit, kind, runtime, argv and health."
  type: list
  elements: dict
"""


class FilterModule:
    """kimi_k3.serving.status_targets."""

    def filters(self):
        return {"status_targets": Filters().filters()["status_targets"]}
