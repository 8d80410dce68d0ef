# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The docker_install_plan filter (its code: plugins/plugin_utils/filters/_container.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._container import Filters

DOCUMENTATION = r"""
name: docker_install_plan
version_added: 0.1.0
short_description: "How Docker is installed on a host: package manager, repository and packages"
description:
  - >-
    From the host's distribution facts and the site's source, the package manager (apt on Debian and Ubuntu,
    dnf on EL 8/9 and openEuler), the repository to configure (none for the distribution's own package; a
    deb822 source or a yum repository for Docker's own, docker-ce) and the packages, with the Python library
    the docker modules use.
  - >-
    Refuses what cannot work, naming the fix: the distribution's Docker on a RHEL-family system that ships
    none (set O(source=docker)), Docker's repository on openEuler (it publishes none), an unknown source or
    an unsupported distribution.
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The host's facts (C(ansible_facts) with os_family, distribution, distribution_release, distribution_major_version)."
    type: dict
    required: true
  source:
    description: "C(distribution) (the distribution's package) or C(docker) (Docker's repository)."
    type: str
    required: true
  repo_uri:
    description: "Docker's repository base URL (empty: download.docker.com for the distribution)."
    type: str
    default: ""
  repo_key:
    description: "The repository's signing key URL or path (empty: the repository's C(/gpg))."
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: Decide how Docker is installed
  ansible.builtin.set_fact:
    docker_install: "{{ ansible_facts | kimi_k3.serving.docker_install_plan('docker') }}"
"""

RETURN = r"""
_value:
  description: "C(manager) (apt or dnf), C(repository) (null, or the fields of deb822_repository or yum_repository) and C(packages)."
  type: dict
"""


class FilterModule:
    """kimi_k3.serving.docker_install_plan."""

    def filters(self):
        return {"docker_install_plan": Filters().filters()["docker_install_plan"]}
