# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The env_file filter (its code: plugins/plugin_utils/filters/_units.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._units import Filters

DOCUMENTATION = r"""
name: env_file
version_added: 0.1.0
short_description: "An environment file for systemd or docker"
description:
  - >-
    Renders a mapping of environment variables as an EnvironmentFile= for systemd (double-quoted,
    escaped) or as a docker --env-file (literal values). Refuses values holding a newline.
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The environment, NAME to value."
    type: dict
    required: true
  fmt:
    description: "systemd or docker."
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Environment file content of a planned service
  ansible.builtin.debug:
    msg: "{{ service.env | kimi_k3.serving.env_file('systemd') }}"
"""

RETURN = r"""
_value:
  description: "The file content, one NAME=value line per variable."
  type: str
"""


class FilterModule:
    """kimi_k3.serving.env_file."""

    def filters(self):
        return {"env_file": Filters().filters()["env_file"]}
