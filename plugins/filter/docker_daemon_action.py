# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The docker_daemon_action filter (its code: plugins/plugin_utils/platforms/_docker_install.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._container import Filters

DOCUMENTATION = r"""
name: docker_daemon_action
version_added: 0.2.0
short_description: "Whether a running Docker takes a changed daemon.json by reload or by restart"
description:
  - >-
    Compares Docker's daemon configuration as it is with the one wanted: nothing when they are equal, reload when
    only keys Docker applies on SIGHUP change (registry-mirrors, insecure-registries, runtimes, labels, debug,
    live-restore, the download and upload limits, shutdown-timeout; its containers keep running), restart otherwise.
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "daemon.json as it is (a dict; empty when there is none)."
    type: dict
    required: true
  wanted:
    description: "daemon.json as it is to be."
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: How Docker takes its new configuration
  ansible.builtin.set_fact:
    k3_docker_action: "{{ k3_daemon_now | kimi_k3.serving.docker_daemon_action(k3_daemon_wanted) }}"
"""

RETURN = r"""
_value:
  description: "None, reload or restart."
  type: str
"""


class FilterModule:
    """kimi_k3.serving.docker_daemon_action."""

    def filters(self):
        return {"docker_daemon_action": Filters().filters()["docker_daemon_action"]}
