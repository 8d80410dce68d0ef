# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The status_report filter (its code: plugins/plugin_utils/filters/_status.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._status import Filters

DOCUMENTATION = r"""
name: status_report
version_added: 0.3.0
short_description: "The deployment's status table, and what is wrong with it, by name"
description:
  - >-
    One row per planned service (host, service, unit, state, health, restarts, whether the running
    argv is the plan's, whether its files are the plan's, the version that runs), plus a row per
    unit of the collection that the plan no longer has.
  - >-
    Problems name the host and service: a unit not running, a health URL not answering 200, a
    running argv that is not the plan's, files that differ from the plan (edited by hand, or an
    inventory change not applied), an unplanned unit, a host not reached.
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The plan (k3_plan_result.plan)."
    type: dict
    required: true
  gathered:
    description: >-
      Per inventory host: C(services) (the service_status module's reports), C(drift) (names of
      the services whose files differ) and C(unplanned) (units). A plan host missing here was not reached.
      With O(fact), C(hostvars): each host's report is its fact of that name.
    type: dict
    required: true
  fact:
    description: "Read each host's report from this fact of O(gathered) (hostvars)."
    type: str
  hosts:
    description: "Only these hosts of the plan are reported (the hosts of a run under --limit); all by default."
    type: list
    elements: str
"""

EXAMPLES = r"""
- name: The table
  ansible.builtin.debug:
    msg: "{{ (plan | kimi_k3.serving.status_report(gathered)).table }}"
"""

RETURN = r"""
_value:
  description: "rows (lists of cells), problems (sentences naming host and service) and table (fixed-width text)."
  type: dict
"""


class FilterModule:
    """kimi_k3.serving.status_report."""

    def filters(self):
        return {"status_report": Filters().filters()["status_report"]}
