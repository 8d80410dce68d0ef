# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""kimi_k3.serving.firewall_rules: the nftables table of one host, from the plan."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._errors import filter_errors, needs_plan
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations._firewall import host_rules


@filter_errors
def _firewall_rules(plan, host, client_networks=None, admin_networks=None, ports=None, allow=None):
    return host_rules(
        needs_plan(plan, "firewall_rules"),
        host,
        client_networks or [],
        admin_networks or [],
        ports or {},
        allow or [],
    )


class Filters:
    """kimi_k3.serving firewall filter."""

    def filters(self):
        return {"firewall_rules": _firewall_rules}
