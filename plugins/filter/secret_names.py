# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The secret_names filter (its code: plugins/plugin_utils/filters/_units.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._units import Filters

DOCUMENTATION = r"""
name: secret_names
version_added: 0.3.0
short_description: "The environment variables of planned services that carry secrets"
description:
  - >-
    The names in the services' C(secret_env) (e.g. C(VLLM_API_KEY), C(OPENAI_API_KEY)), sorted: what
    a support bundle redacts in environment files.
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "Services of the plan."
    type: list
    elements: dict
    required: true
"""

EXAMPLES = r"""
- name: The secret variables of this host
  ansible.builtin.debug:
    msg: "{{ services | kimi_k3.serving.secret_names }}"
"""

RETURN = r"""
_value:
  description: "Variable names."
  type: list
  elements: str
"""


class FilterModule:
    """kimi_k3.serving.secret_names."""

    def filters(self):
        return {"secret_names": Filters().filters()["secret_names"]}
