# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""kimi_k3.serving.firewall_rules: the nftables table of one host, from the plan."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.kimi_k3.serving.plugins.plugin_utils._firewall import FirewallError, host_rules


def _firewall_rules(plan, host, client_networks=None, admin_networks=None):
    if not isinstance(plan, dict) or "hosts" not in plan:
        raise AnsibleFilterError("firewall_rules needs the plan (k3_plan_result.plan): run the plan stage first")
    try:
        return host_rules(plan, host, client_networks or [], admin_networks or [])
    except FirewallError as exc:
        raise AnsibleFilterError(str(exc)) from None


class FilterModule:
    """kimi_k3.serving firewall filter."""

    def filters(self):
        return {"firewall_rules": _firewall_rules}
