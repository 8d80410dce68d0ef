# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The image_differences filter (its code: plugins/plugin_utils/filters/_images.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._images import Filters

DOCUMENTATION = r"""
name: image_differences
version_added: 0.1.0
short_description: "Planned container images whose build differs between nodes"
description:
  - >-
    Takes, per host, the images community.docker.docker_image_info returned and lists every tag whose image
    ID (the digest of the image's configuration) is not the same on every host, naming the hosts on each side.
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "Host name to its list of images (C(images) of community.docker.docker_image_info)."
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Every node runs the same build
  ansible.builtin.assert:
    that: images_by_host | kimi_k3.serving.image_differences | length == 0
"""

RETURN = r"""
_value:
  description: "One message per image that differs (empty when every node has the same build)."
  type: list
  elements: str
"""


class FilterModule:
    """kimi_k3.serving.image_differences."""

    def filters(self):
        return {"image_differences": Filters().filters()["image_differences"]}
