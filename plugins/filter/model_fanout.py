# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The model_fanout filter (its code: plugins/plugin_utils/operations/_model_sources.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._weights import Filters

DOCUMENTATION = r"""
name: model_fanout
version_added: 0.2.0
short_description: "Which node fetches each checkpoint and which nodes it goes to"
description:
  - >-
    Takes the checkpoints to fetch (kimi_k3.serving.model_sources) and, per host, whether it holds each
    one already (kimi_k3.serving.model_copy with state=check), and gives per checkpoint its seed (the
    given one, else the first host that holds it, else the first host), whether the seed must fetch it,
    and the hosts it must be brought to.
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The checkpoints to fetch."
    type: list
    elements: dict
    required: true
  holding:
    description: "Host name to its model_copy check results, one per checkpoint in order."
    type: dict
    required: true
  hosts:
    description: "The hosts of the run, in order."
    type: list
    elements: str
    required: true
  seed:
    description: "The host that fetches (model_weights_seed); empty: chosen as above."
    type: str
"""

EXAMPLES = r"""
- name: Seeds and targets
  ansible.builtin.set_fact:
    k3_fanout: "{{ k3_sources | kimi_k3.serving.model_fanout(k3_holding, ansible_play_hosts) }}"
"""

RETURN = r"""
_value:
  description: "One entry per checkpoint: name, path, source, token (a variable's name), seed, fetch, targets."
  type: list
  elements: dict
"""


class FilterModule:
    """kimi_k3.serving.model_fanout."""

    def filters(self):
        return {"model_fanout": Filters().filters()["model_fanout"]}
