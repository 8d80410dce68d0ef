# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The model_sources filter (its code: plugins/plugin_utils/operations/_model_sources.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._weights import Filters

DOCUMENTATION = r"""
name: model_sources
version_added: 0.2.0
short_description: "Where each checkpoint is fetched from, checked against the plan"
description:
  - >-
    Takes the plan and k3_model_weights_fetch (per checkpoint, model and/or draft: hub, repo, revision,
    endpoint) and gives each checkpoint to fetch with the folder the plan puts it in. The hub and the
    repository default to what the platform's seed document names; a revision must be pinned (a commit
    on Hugging Face). Every problem is reported at once, naming the variable and the fix.
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The plan (k3_plan_result.plan)."
    type: dict
    required: true
  fetch:
    description: "k3_model_weights_fetch: checkpoint name (model, draft) to its source."
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: The checkpoints to fetch
  ansible.builtin.set_fact:
    k3_sources: "{{ k3_plan_result.plan | kimi_k3.serving.model_sources(k3_model_weights_fetch) }}"
"""

RETURN = r"""
_value:
  description: "One entry per checkpoint to fetch."
  type: list
  elements: dict
  contains:
    name:
      description: model or draft.
      type: str
    path:
      description: The folder the plan puts it in.
      type: str
    source:
      description: hub, repo, revision and, for a mirror, endpoint.
      type: dict
    token:
      description: The name of the vault variable that holds the hub's token (never its value).
      type: str
"""


class FilterModule:
    """kimi_k3.serving.model_sources."""

    def filters(self):
        return {"model_sources": Filters().filters()["model_sources"]}
