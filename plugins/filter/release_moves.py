# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The release_moves filter (its code: plugins/plugin_utils/filters/_rolling.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._rolling import Filters

DOCUMENTATION = r"""
name: release_moves
version_added: 0.3.0
short_description: "A line per engine saying which release a rollback gives it"
description:
  - >-
    From each engine host's result of M(kimi_k3.serving.service_releases) with C(state=rollback),
    paired with its host name: per service, the release it goes back to (and how many files), or
    that it keeps its release (already there, no earlier release kept, or the asked release not kept).
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "Pairs of host name and that host's registered result (a skipped host's has no services)."
    type: list
    elements: list
    required: true
"""

EXAMPLES = r"""
- name: What goes back where
  ansible.builtin.debug:
    msg: "{{ hosts | zip(hosts | map('extract', hostvars) | map(attribute='restored', default={})) | kimi_k3.serving.release_moves }}"
"""

RETURN = r"""
_value:
  description: "One sentence per engine service, host/service first."
  type: list
  elements: str
"""


class FilterModule:
    """kimi_k3.serving.release_moves."""

    def filters(self):
        return {"release_moves": Filters().filters()["release_moves"]}
