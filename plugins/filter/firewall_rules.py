# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The firewall_rules filter (its code: plugins/plugin_utils/filters/_firewall.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._firewall import Filters

DOCUMENTATION = r"""
name: firewall_rules
version_added: 0.2.0
short_description: "The nftables table of one host, from the plan"
description:
  - >-
    Renders the table C(inet kimi_k3) for a host, default deny: SSH from the admin networks only; each
    planned port from the hosts the plan connects to it, the monitoring hosts and the admin networks
    (the endpoint's port also from the client networks), anyone else a TCP reset; the exporters' (and on
    a monitoring host Prometheus' and Alertmanager's) ports from the monitoring hosts and the admin
    networks; every port between the members of a multi-node engine group; the transfers' and the fabric
    check's ports from the deployment; the inventory's own additions; every other packet dropped.
    The file replaces the table atomically (nft -f).
author: kimi_k3.serving maintainers (!UNKNOWN)
options:
  _input:
    description: "The plan (k3_plan_result.plan)."
    type: dict
    required: true
  host:
    description: "The inventory host."
    type: str
    required: true
  client_networks:
    description: "Addresses or networks clients reach the endpoint from (k3_client_networks)."
    type: list
    elements: str
  admin_networks:
    description: "Addresses or networks allowed to every planned port (k3_admin_networks)."
    type: list
    elements: str
  ports:
    description:
      - "The ports besides the plan's, each a list of ports or ranges a-b:"
      - "C(ssh) (default 22) from the admin networks only;"
      - "C(monitoring), on a monitoring host, Prometheus' and Alertmanager's, from the monitoring hosts and the admin networks only;"
      - "C(gossip), Alertmanager's cluster port, TCP from the other monitoring hosts only, where there are two or more;"
      - "C(transfers), the BitTorrent transfers', TCP and UDP, and C(fabric), the fabric check's, from the deployment's hosts only."
    type: dict
  allow:
    description:
      - "The inventory's additions (k3_firewall_allow), each C({ports, proto, from, comment})."
      - "C(from) lists addresses, networks or the names deployment, admins, clients and monitoring."
    type: list
    elements: dict
"""

EXAMPLES = r"""
- name: This host's table
  ansible.builtin.copy:
    dest: /etc/kimi-k3/firewall.nft
    content: "{{ (plan | kimi_k3.serving.firewall_rules(inventory_hostname, ['10.1.0.0/16'])).ruleset }}"
    mode: "0644"
"""

RETURN = r"""
_value:
  description: "ports (the planned port ranges), endpoint_ports (those open to clients) and ruleset (the nft file)."
  type: dict
"""


class FilterModule:
    """kimi_k3.serving.firewall_rules."""

    def filters(self):
        return {"firewall_rules": Filters().filters()["firewall_rules"]}
