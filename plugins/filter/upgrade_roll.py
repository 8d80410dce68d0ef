# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The upgrade_roll filter (its code: plugins/plugin_utils/operations/_canary.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._rolling import Filters

DOCUMENTATION = r"""
name: upgrade_roll
version_added: 0.3.0
short_description: "An upgrade's batches - the canary first - and where it pauses"
description:
  - >-
    From the plan and, per host, the engine services whose files changed or that still run an earlier
    release - the replica groups to roll; the canary (the first O(canary) groups of each role, or
    O(canary_groups)) as the first batch, then the others O(serial) at a time; with O(pause_after), the
    groups left for the next run once that many are rolled (at a batch's end).
  - >-
    Also, per role of the canary, the groups still on the release before (the canary's gates compare it
    with them), and the outages to confirm (a canary that takes a whole role, a batch that does, a front
    door with a fixed worker list).
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The plan (k3_plan_result.plan)."
    type: dict
    required: true
  changed:
    description: "Host name to the names of its services to roll."
    type: dict
    required: true
  canary:
    description: "Groups of each role in the canary (0 - no canary)."
    type: int
    default: 1
  canary_groups:
    description: "The canary's group ids, in place of O(canary)."
    type: list
    elements: str
  serial:
    description: "Groups per batch after the canary."
    type: int
    default: 1
  pause_after:
    description: "Stop once this many groups are rolled (0 - roll them all)."
    type: int
    default: 0
"""

EXAMPLES = r"""
- name: The upgrade's batches
  ansible.builtin.set_fact:
    roll: "{{ plan | kimi_k3.serving.upgrade_roll(changed, canary=1, serial=1, pause_after=0) }}"
"""

RETURN = r"""
_value:
  description: "C(canary) (group ids), C(batches) (lists of group ids, the canary's first), C(paused) (group ids
    left for the next run), C(baseline) (role to group ids on the release before), C(outages) (sentences)."
  type: dict
"""


class FilterModule:
    """kimi_k3.serving.upgrade_roll."""

    def filters(self):
        return {"upgrade_roll": Filters().filters()["upgrade_roll"]}
