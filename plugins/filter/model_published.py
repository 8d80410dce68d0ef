# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The model_published filter (its code: plugins/plugin_utils/operations/_model_sources.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._weights import Filters

DOCUMENTATION = r"""
name: model_published
version_added: 0.2.0
short_description: "Each fetched checkpoint with the publisher's files its seed listed"
description:
  - >-
    Takes the checkpoints of kimi_k3.serving.model_fanout and the results of the seeds' listing of them
    (kimi_k3.serving.model_fetch in check mode, looped over the checkpoints) and gives per checkpoint its
    name, folder, source and the publisher's files (path, size, SHA-256 or Git blob id): what the role keeps
    with the release and compares every node's folder with.
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The checkpoints (model_fanout's entries)."
    type: list
    elements: dict
    required: true
  listed:
    description: "The seeds' model_fetch results, each with its loop item (the checkpoint) and files."
    type: list
    elements: dict
    required: true
"""

EXAMPLES = r"""
- name: The publisher's files of each checkpoint
  ansible.builtin.set_fact:
    k3_published: "{{ k3_fanout | kimi_k3.serving.model_published(k3_listed.results) }}"
"""

RETURN = r"""
_value:
  description: "One entry per checkpoint listed: name, path, source, files."
  type: list
  elements: dict
"""


class FilterModule:
    """kimi_k3.serving.model_published."""

    def filters(self):
        return {"model_published": Filters().filters()["model_published"]}
