# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Filters that turn a planned service into systemd unit parts (logic in plugin_utils/_units.py)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.kimi_k3.serving.plugins.plugin_utils import _units as units


def unit_exec_start(service, runtime, env_file, docker="/usr/bin/docker"):
    try:
        return units.exec_line(service, runtime, env_file, docker)
    except (units.UnitError, KeyError) as exc:
        raise AnsibleFilterError("unit_exec_start: %s" % exc) from exc


def env_file(env, fmt):
    try:
        return units.env_file_content(env, fmt)
    except units.UnitError as exc:
        raise AnsibleFilterError("env_file: %s" % exc) from exc


class FilterModule:
    """kimi_k3.serving unit filters."""

    def filters(self):
        return {
            "unit_exec_start": unit_exec_start,
            "env_file": env_file,
            "health_targets": units.health_targets,
            "service_paths": units.service_paths,
            "status_targets": units.status_targets,
            "bundle_files": units.bundle_files,
            "bundle_urls": units.bundle_urls,
            "secret_names": units.secret_names,
        }
