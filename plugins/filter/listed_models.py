# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The listed_models filter (its code: plugins/plugin_utils/filters/_rolling.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._rolling import Filters

DOCUMENTATION = r"""
name: listed_models
version_added: 0.3.0
short_description: "The model names a GET /v1/models answer lists"
description:
  - >-
    vLLM and a vllm-router with fixed workers answer C(/v1/models) in OpenAI's shape
    (C(data[].id)); a vllm-router that takes its workers at runtime (C(--enable-igw)) answers
    C({"models": [...]}) as text. This filter reads either, from the parsed answer or its text.
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The answer: a mapping (the uri module's C(json)) or its text (C(content))."
    type: raw
    required: true
"""

EXAMPLES = r"""
- name: The served models
  ansible.builtin.debug:
    msg: "{{ models.json | default(models.content) | kimi_k3.serving.listed_models }}"
"""

RETURN = r"""
_value:
  description: "The model names, in the answer's order; empty for an answer of another shape."
  type: list
  elements: str
"""


class FilterModule:
    """kimi_k3.serving.listed_models."""

    def filters(self):
        return {"listed_models": Filters().filters()["listed_models"]}
