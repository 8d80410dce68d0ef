# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The mirror_config filter (its code: plugins/plugin_utils/platforms/_registry_mirror.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._images import Filters

DOCUMENTATION = r"""
name: mirror_config
version_added: 0.2.0
short_description: "The configuration of the site's Docker Hub mirror (the distribution registry in proxy mode)"
description:
  - >-
    Takes the mirror (the mirror_site filter's answer) and gives the registry's config.yml as a dict: listening on
    the node's plan address only, a pull-through cache of Docker Hub kept in O(storage), no debug listener.
    Refused, naming the variable, when the credentials have a username without a password or the other way round.
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The mirror: host, ip, port (mirror_site)."
    type: dict
    required: true
  storage:
    description: "The folder the registry keeps the blobs in."
    type: str
    default: /var/lib/docker-registry
  remote:
    description: "The registry it mirrors."
    type: str
    default: https://registry-1.docker.io
  credentials:
    description: "A Docker Hub account (username, password), which lifts the anonymous pull limit."
    type: dict
"""

EXAMPLES = r"""
- name: The mirror's configuration
  ansible.builtin.copy:
    dest: /etc/docker/registry/config.yml
    content: "{{ k3_mirror | kimi_k3.serving.mirror_config | to_nice_yaml }}"
    mode: "0600"
"""

RETURN = r"""
_value:
  description: "The registry's configuration (version, log, storage, http, proxy, health)."
  type: dict
"""


class FilterModule:
    """kimi_k3.serving.mirror_config."""

    def filters(self):
        return {"mirror_config": Filters().filters()["mirror_config"]}
