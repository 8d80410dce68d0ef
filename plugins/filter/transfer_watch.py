# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The transfer_watch filter (its code: plugins/plugin_utils/operations/_model_sources.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._weights import Filters

DOCUMENTATION = r"""
name: transfer_watch
version_added: 0.2.0
short_description: "What the progress of a seed's background fetches is read from"
description:
  - >-
    Takes the results a seed registered when it started its checkpoints' fetches in the background
    (kimi_k3.serving.model_fetch with async, looped over the seed's listing of each checkpoint) and
    gives per fetch its checkpoint's name, its job id, the staging folder it writes into, the bytes it
    brings and its progress log, as kimi_k3.serving.transfer_progress reads them.
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The registered results of the fetches started (each with ansible_job_id)."
    type: list
    elements: dict
    required: true
  log_dir:
    description: "The folder of the progress logs (model_weights_fanout_dir)."
    type: str
    required: true
"""

EXAMPLES = r"""
- name: What to watch
  ansible.builtin.set_fact:
    k3_watch: "{{ k3_fetch_jobs.results | selectattr('ansible_job_id', 'defined') | kimi_k3.serving.transfer_watch('/var/lib/kimi-k3/fanout') }}"
"""

RETURN = r"""
_value:
  description: "One entry per fetch: name, job, path (a list with the staging folder), total (bytes), log."
  type: list
  elements: dict
"""


class FilterModule:
    """kimi_k3.serving.transfer_watch."""

    def filters(self):
        return {"transfer_watch": Filters().filters()["transfer_watch"]}
