# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Filter over plugin_utils/_docker_install.py."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.kimi_k3.serving.plugins.plugin_utils._docker_install import (
    DockerInstallError,
    docker_install_plan,
)


def _docker_install_plan(facts, source, repo_uri="", repo_key=""):
    try:
        return docker_install_plan(dict(facts or {}), source, repo_uri=repo_uri or "", repo_key=repo_key or "")
    except DockerInstallError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    """kimi_k3.serving container runtime filters."""

    def filters(self):
        return {"docker_install_plan": _docker_install_plan}
