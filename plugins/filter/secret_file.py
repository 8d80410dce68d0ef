# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The secret_file filter (its code: plugins/plugin_utils/filters/_secrets.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._secrets import Filters

DOCUMENTATION = r"""
name: secret_file
version_added: 0.2.0
short_description: "The text of a planned 0600 secret file"
description:
  - >-
    Renders one C(secret_files) entry of a planned service from k3_api_key and k3_admin_api_key.
    Format C(vllm_config_api_keys) is the YAML mapping C(api-key) to every key, read by vLLM with
    --config; C(nginx_front_door_keys) the front door's nginx maps (who calls: client or admin, each
    key matched case-sensitively, and the admin key sent behind the door). Use the result only in a
    task with C(no_log).
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "One entry of the service's secret_files (path and format)."
    type: dict
    required: true
  keys:
    description: "k3_api_key: one key or a list."
    type: raw
    required: true
  admin:
    description: "k3_admin_api_key: one key, or nothing."
    type: raw
    required: false
"""

EXAMPLES = r"""
- name: vLLM's key file
  ansible.builtin.copy:
    dest: "{{ item.path }}"
    content: "{{ item | kimi_k3.serving.secret_file(k3_api_key, k3_admin_api_key) }}"
    mode: "0600"
  loop: "{{ service.secret_files }}"
  no_log: true
"""

RETURN = r"""
_value:
  description: "The file's text."
  type: str
"""


class FilterModule:
    """kimi_k3.serving.secret_file."""

    def filters(self):
        return {"secret_file": Filters().filters()["secret_file"]}
