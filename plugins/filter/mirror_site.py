# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The mirror_site filter (its code: plugins/plugin_utils/platforms/_registry_mirror.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._images import Filters

DOCUMENTATION = r"""
name: mirror_site
version_added: 0.2.0
short_description: "The node that runs the site's Docker Hub mirror, and its address"
description:
  - >-
    From the plan, the node that runs the site's pull-through cache of Docker Hub (the distribution
    registry), which every node running containers names in Docker's registry-mirrors, so that an image
    pinned by digest comes from Docker Hub once. None when disabled or when fewer than two nodes run
    containers. Refused, naming the variable, when the named node runs no containers or a planned service
    of it listens on the port.
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The deployment's plan."
    type: dict
    required: true
  host:
    description: "The node (container_runtime_mirror_host); empty: the first node of the plan that runs containers."
    type: str
    default: ""
  port:
    description: "The mirror's port (container_runtime_mirror_port)."
    type: int
    default: 5050
  enabled:
    description: "Whether the site runs the mirror (container_runtime_mirror)."
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: The site's mirror
  ansible.builtin.set_fact:
    k3_mirror: "{{ k3_plan | kimi_k3.serving.mirror_site('', 5050) }}"
"""

RETURN = r"""
_value:
  description: "host, ip, port and url (http://ip:port) of the mirror, or None."
  type: dict
"""


class FilterModule:
    """kimi_k3.serving.mirror_site."""

    def filters(self):
        return {"mirror_site": Filters().filters()["mirror_site"]}
