# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The service_files filter (its code: plugins/plugin_utils/operations/_unit_files.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._units import Filters

DOCUMENTATION = r"""
name: service_files
version_added: 0.1.0
short_description: "Every folder, file and unit a host's planned services need, for the service_units module"
description:
  - >-
    Renders, on the controller, what the kimi_k3.serving.service_units module writes on a host in one
    step: the configuration folder and each service's working folder; per service, the configuration
    files the plan renders, its environment file (0600, the plan's env, the runtime's extra env and the
    keys the plan names in secret_env), its secret files (0600) and its systemd unit (ExecStart wraps
    the planned argv for the service's runtime, host or docker).
  - "The units with their start phase: node0 starts first, followers once every node 0 has started."
  - "The key values, which the module masks wherever they would show in its output."
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The host's planned services (entries of plan.hosts[host].services)."
    type: list
    elements: dict
    required: true
  settings:
    description: >-
      config_dir, state_dir, path (PATH entries before the system's, host runtime), extra_env (added to
      every environment file), limits (LimitNAME=value of every unit) and docker (the client's path),
      all of them (the service_unit role passes its own variables).
    type: dict
    required: true
  keys:
    description: "The client keys (k3_api_key: one key or a list)."
    type: raw
  admin:
    description: "The admin key (k3_admin_api_key)."
    type: str
"""

EXAMPLES = r"""
- name: Install this host's planned services
  kimi_k3.serving.service_units:
    directories: "{{ files.directories }}"
    files: "{{ files.files }}"
    secrets: "{{ files.secrets }}"
  vars:
    files: "{{ services | kimi_k3.serving.service_files(settings, k3_api_key, k3_admin_api_key) }}"
"""

RETURN = r"""
_value:
  description: "directories, files, units and secrets, as the kimi_k3.serving.service_units module takes them."
  type: dict
"""


class FilterModule:
    """kimi_k3.serving.service_files."""

    def filters(self):
        return {"service_files": Filters().filters()["service_files"]}
