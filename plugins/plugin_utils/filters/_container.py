# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The container runtime's install plan for a host's distribution (plugin_utils/platforms/_docker_install.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._errors import filter_errors
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.platforms._docker_install import (
    daemon_action,
    docker_install_plan,
)


@filter_errors
def _docker_install_plan(facts, source, repo_uri="", repo_key=""):
    return docker_install_plan(dict(facts or {}), source, repo_uri=repo_uri or "", repo_key=repo_key or "")


class Filters:
    """kimi_k3.serving container runtime filters."""

    def filters(self):
        return {"docker_install_plan": _docker_install_plan, "docker_daemon_action": filter_errors(daemon_action)}
