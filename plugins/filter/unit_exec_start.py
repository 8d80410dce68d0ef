# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The unit_exec_start filter (its code: plugins/plugin_utils/filters/_units.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._units import Filters

DOCUMENTATION = r"""
name: unit_exec_start
version_added: 0.1.0
short_description: "The ExecStart= line of a planned service"
description:
  - >-
    Wraps the service's planned argv for its runtime and quotes every argument for systemd.
    The host runtime runs the argv itself; the docker runtime runs the planned image with the
    planned container options, the environment file and the argv (its first element as entrypoint).
  - "Shell set-up the plan asks for (unset, source, prepend) runs through bash before the argv."
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "A service of the plan (name, unit, argv, image, container, shell)."
    type: dict
    required: true
  runtime:
    description: "host or docker."
    type: str
    required: true
  env_file:
    description: "Path of the service's environment file (docker --env-file)."
    type: path
    required: true
  docker:
    description: "Path of the docker client."
    type: path
    default: /usr/bin/docker
"""

EXAMPLES = r"""
- name: Render the unit's ExecStart
  ansible.builtin.debug:
    msg: "{{ service | kimi_k3.serving.unit_exec_start('host', '/etc/kimi-k3/engine.env') }}"
"""

RETURN = r"""
_value:
  description: "The ExecStart= value."
  type: str
"""


class FilterModule:
    """kimi_k3.serving.unit_exec_start."""

    def filters(self):
        return {"unit_exec_start": Filters().filters()["unit_exec_start"]}
