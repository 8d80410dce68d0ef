# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The api_key filter (its code: plugins/plugin_utils/filters/_secrets.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._secrets import Filters

DOCUMENTATION = r"""
name: api_key
version_added: 0.2.0
short_description: "The key the collection's own requests carry"
description:
  - >-
    The deployment's own key: k3_admin_api_key when it is given, else the first key of k3_api_key
    (one key or a list); an empty text when none is set. Health waits, verify and the operations
    send it as a bearer token: behind the front door it is the only key the router, the proxy and
    the engines accept. With O(client=true) a client's key instead (the first of k3_api_key, else
    the admin key), as the benchmark and the evaluation send through the front door.
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "k3_api_key."
    type: raw
    required: true
  admin:
    description: "k3_admin_api_key (one key), or nothing."
    type: raw
    required: false
  client:
    description: "Prefer a client's key to the admin key."
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: A request with the deployment's key
  ansible.builtin.uri:
    url: "{{ endpoint }}/v1/models"
    headers:
      Authorization: "Bearer {{ k3_api_key | kimi_k3.serving.api_key(k3_admin_api_key | default('')) }}"
  no_log: true
"""

RETURN = r"""
_value:
  description: "The key, or an empty text."
  type: str
"""


class FilterModule:
    """kimi_k3.serving.api_key."""

    def filters(self):
        return {"api_key": Filters().filters()["api_key"]}
