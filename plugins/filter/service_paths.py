# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The service_paths filter (its code: plugins/plugin_utils/filters/_units.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._units import Filters

DOCUMENTATION = r"""
name: service_paths
version_added: 0.3.0
short_description: "Every path the service_unit role writes for planned services"
description:
  - >-
    Per service: its systemd unit, its environment file, the configuration and secret files the
    plan gives it, its working folder and the folders its program writes (C(writes), e.g. logs).
    What a teardown removes; sorted, without repeats.
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "Services of the plan."
    type: list
    elements: dict
    required: true
  config_dir:
    description: "The configuration folder (service_unit_config_dir)."
    type: str
    required: true
  state_dir:
    description: "The parent of the working folders (service_unit_state_dir)."
    type: str
    required: true
  unit_dir:
    description: "Where the units are."
    type: str
    default: /etc/systemd/system
  releases_dir:
    description: "Where the host keeps the releases of the services' files (service_unit_releases_dir); none - left out."
    type: str
"""

EXAMPLES = r"""
- name: Remove this host's services' files
  ansible.builtin.file:
    path: "{{ item }}"
    state: absent
  loop: "{{ services | kimi_k3.serving.service_paths('/etc/kimi-k3', '/var/lib/kimi-k3') }}"
"""

RETURN = r"""
_value:
  description: "Absolute paths."
  type: list
  elements: str
"""


class FilterModule:
    """kimi_k3.serving.service_paths."""

    def filters(self):
        return {"service_paths": Filters().filters()["service_paths"]}
