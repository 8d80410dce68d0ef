# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The secret_env filter (its code: plugins/plugin_utils/filters/_secrets.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._secrets import Filters

DOCUMENTATION = r"""
name: secret_env
version_added: 0.2.0
short_description: "The environment variables a planned service reads its API key from"
description:
  - >-
    Fills a service's C(secret_env) (variable name to C(primary) or C(all)) with the keys of
    k3_api_key and k3_admin_api_key: C(primary) is the deployment's own key (the admin key, else
    the first of k3_api_key), C(all) every key, comma-separated. Fails when the plan
    wants keys and none is given. Use the result only in a task with C(no_log).
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The service's secret_env from the plan."
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
- name: Environment of a planned service, keys included
  ansible.builtin.copy:
    dest: /etc/kimi-k3/engine.env
    content: >-
      {{ service.env | combine(service.secret_env | kimi_k3.serving.secret_env(k3_api_key, k3_admin_api_key))
         | kimi_k3.serving.env_file('systemd') }}
    mode: "0600"
  no_log: true
"""

RETURN = r"""
_value:
  description: "Variable name to key."
  type: dict
"""


class FilterModule:
    """kimi_k3.serving.secret_env."""

    def filters(self):
        return {"secret_env": Filters().filters()["secret_env"]}
