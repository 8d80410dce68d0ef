# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The manifest_differences filter (its code: plugins/plugin_utils/filters/_weights.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._weights import Filters

DOCUMENTATION = r"""
name: manifest_differences
version_added: 0.1.0
short_description: "Where checkpoint manifests differ between nodes"
description:
  - >-
    Takes, per host, the manifests kimi_k3.serving.model_manifest returned and lists every folder that is
    missing on a host and every folder whose revision differs between hosts, naming the hosts on both sides
    and the files that differ.
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "Host name to its list of manifests."
    type: dict
    required: true
  described:
    description:
      - "Host name to the manifests an earlier step of the run made (kimi_k3.serving.preflight_host's
        C(manifests)), taken for a host whose list in the input is empty."
    type: dict
  published:
    description:
      - "The checkpoints fetched from a hub, each with its folder (C(path)) and the publisher's files
        (C(files): path, size, sha256 or blob_id), as kimi_k3.serving.model_published gives them: every
        node's folder is compared with them too (names and sizes always, the SHA-256 where the manifest
        has a file's whole hash)."
    type: list
    elements: dict
  mode:
    description: "The manifests' mode (quick: whole hashes of small files only; full: of every file)."
    type: str
    default: quick
"""

EXAMPLES = r"""
- name: Fail when the nodes hold different checkpoints
  ansible.builtin.assert:
    that: manifests | kimi_k3.serving.manifest_differences | length == 0
"""

RETURN = r"""
_value:
  description: "One message per problem (empty when every node holds the same revision)."
  type: list
  elements: str
"""


class FilterModule:
    """kimi_k3.serving.manifest_differences."""

    def filters(self):
        return {"manifest_differences": Filters().filters()["manifest_differences"]}
