# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Filters that read a plan: a host's planned services, and the node 0 engines to restart.

The logic is plain Python in plugin_utils/plan/_plan_access.py.
"""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._errors import filter_errors
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _plan_access as plan_access


@filter_errors(label="host_services")
def host_services(plan, host, *, kind=None, runtime=None, role=None, name=None, followers=None, needs_engines=None):
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


@filter_errors(label="node0_restarts")
def node0_restarts(plan, host, follower_states, read_before=None):
    return plan_access.node0_restarts(plan, host, follower_states, read_before)


class Filters:
    """kimi_k3.serving plan access filters."""

    def filters(self):
        return {"host_services": host_services, "node0_restarts": node0_restarts}
