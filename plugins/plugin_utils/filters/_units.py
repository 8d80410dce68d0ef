# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Filters that turn a planned service into systemd unit parts (logic in plugin_utils/operations/_units.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._errors import filter_errors
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations import _unit_files as unit_files
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations import _units as units


@filter_errors(label="unit_exec_start", errors=(ValueError, KeyError))
def unit_exec_start(service, runtime, env_file, docker="/usr/bin/docker"):
    return units.exec_line(service, runtime, env_file, docker)


@filter_errors(label="env_file")
def env_file(env, fmt):
    return units.env_file_content(env, fmt)


@filter_errors(label="service_files", errors=(ValueError, KeyError))
def service_files(services, settings=None, keys=None, admin=None):
    return unit_files.service_files(services, settings, keys, admin)


class Filters:
    """kimi_k3.serving unit filters."""

    def filters(self):
        return {
            "unit_exec_start": unit_exec_start,
            "env_file": env_file,
            "service_files": service_files,
            "health_targets": units.health_targets,
            "service_paths": units.service_paths,
            "status_targets": units.status_targets,
            "bundle_files": units.bundle_files,
            "bundle_urls": units.bundle_urls,
            "secret_names": units.secret_names,
        }
