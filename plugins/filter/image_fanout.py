# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The image_fanout filter (its code: plugins/plugin_utils/platforms/_images.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._images import Filters

DOCUMENTATION = r"""
name: image_fanout
version_added: 0.2.0
short_description: "Which node gets each planned image once and which nodes it is brought to"
description:
  - >-
    Takes, per host, the images its planned services run and the images community.docker.docker_image_info
    found there, and gives per image the node that gets it once (a node that holds it, else the first that
    needs it, or the one given), how (pull, or load from the site's archive) and the nodes that lack it, to
    which the container_runtime role brings it by BitTorrent. An image pinned by digest is pulled: from Docker
    Hub, with the site's mirror (O(mirror)), by one node that lacks it and then by the others from the
    mirror; otherwise by each node that lacks it. Refused, naming the hosts, when the nodes hold different
    builds of an image.
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "Host name to the images its planned services run."
    type: dict
    required: true
  info:
    description: "Host name to its list of images (C(images) of community.docker.docker_image_info)."
    type: dict
    required: true
  hosts:
    description: "The hosts of the run, in order."
    type: list
    elements: str
    required: true
  seed:
    description: "The node that gets every image (container_runtime_seed); empty: chosen per image."
    type: str
  archives:
    description: "Image to the archive (docker save) the seed loads instead of pulling."
    type: dict
  root:
    description: "The folder under which each image's archive is kept on the nodes."
    type: str
    default: /var/lib/kimi-k3/images
  mirror:
    description: "Whether the site runs a Docker Hub mirror (the mirror_site filter) that the nodes pull through."
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Who gets each image and who receives it
  ansible.builtin.set_fact:
    k3_images: "{{ k3_needs | kimi_k3.serving.image_fanout(k3_info, ansible_play_hosts) }}"
"""

RETURN = r"""
_value:
  description: >-
    One entry per image: image, name, path (its archive's folder), seed, how (pull, load or none), targets (the
    nodes it is brought to by BitTorrent), mirrored (the nodes that pull it from the site's mirror after the seed).
  type: list
  elements: dict
"""


class FilterModule:
    """kimi_k3.serving.image_fanout."""

    def filters(self):
        return {"image_fanout": Filters().filters()["image_fanout"]}
