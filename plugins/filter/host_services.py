# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Filters that read a plan: a host's planned services, and the node 0 engines to restart.

The logic is plain Python in plugin_utils/_plan_access.py.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.kimi_k3.serving.plugins.plugin_utils import _plan_access as plan_access


def host_services(plan, host, kind=None, runtime=None, role=None, name=None, followers=None, needs_engines=None):
    try:
        return plan_access.host_services(
            plan,
            host,
            kind=kind,
            runtime=runtime,
            role=role,
            name=name,
            followers=followers,
            needs_engines=needs_engines,
        )
    except plan_access.PlanAccessError as exc:
        raise AnsibleFilterError("host_services: %s" % exc) from exc


def node0_restarts(plan, host, follower_states):
    try:
        return plan_access.node0_restarts(plan, host, follower_states)
    except plan_access.PlanAccessError as exc:
        raise AnsibleFilterError("node0_restarts: %s" % exc) from exc


class FilterModule:
    """kimi_k3.serving plan access filters."""

    def filters(self):
        return {"host_services": host_services, "node0_restarts": node0_restarts}
