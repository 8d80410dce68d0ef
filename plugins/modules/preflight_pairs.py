#!/usr/bin/python
# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Every planned connection between two hosts, from the plan; changes nothing."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: preflight_pairs
short_description: The planned connections between hosts, for the preflight connection test
version_added: 0.1.0
description:
  - Derives from the plan which host connects to which port of which other host, and why
    (see C(plugins/module_utils/preflight_connections.py), C(connections)).
  - A service waits for each service of its C(after) list at that service's health URL; a router or
    proxy sends requests to every engine's HTTP port; engines register with the router's
    C(discovery) port; data-parallel followers join their node 0 at the C(dp-rpc) port; decode
    engines pull the KV cache from the prefill engines' KV ports (C(kv), C(moriio-handshake),
    C(moriio-notify), C(nixl-side-channel)); prefill engines use the MetaService's C(meta) and
    C(config-store) ports.
  - Meant to run once, on the controller (C(run_once), C(delegate_to=localhost)). Its action plugin
    works it out in the controller's own process; this module does the same where it is run directly.
options:
  plan:
    description: The plan (C(plan.json) of the plan stage).
    type: dict
    required: true
  hosts:
    description:
      - The hosts taking part (the play's hosts, e.g. under C(--limit)). A connection with an end outside
        them is not tested; C(untested) counts them. Default every planned host.
    type: list
    elements: str
extends_documentation_fragment:
  - kimi_k3.serving.attributes.read_only
author:
  - kimi_k3.serving maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Work out which hosts connect to which ports
  kimi_k3.serving.preflight_pairs:
    plan: "{{ hostvars['localhost']['k3_plan_result']['plan'] }}"
  delegate_to: localhost
  run_once: true
  register: k3_pairs
"""

RETURN = r"""
pairs:
  description: Every connection (source host, destination host and port).
  returned: always
  type: list
  elements: dict
  sample: [{"src": "k3-sb-front", "src_service": "router", "dst": "k3-sb-prefill", "dst_service": "prefill",
            "ip": "10.77.0.14", "port": 8100, "name": "prefill http",
            "why": "router waits for k3-sb-prefill/prefill to be healthy"}]
untested:
  description: How many connections have an end outside C(hosts) and are not tested.
  returned: always
  type: int
  sample: 3
hosts:
  description: Per host, the ports to listen on (with the hosts that connect), the connections to make, and
    the addresses each of its services talks to.
  returned: always
  type: dict
  sample: {"k3-sb-prefill": {"listen": [{"port": 8100, "name": "prefill http", "expect": ["k3-sb-front"]}],
                             "connect": [], "talks_to": {"prefill": ["10.77.0.11"]}}}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kimi_k3.serving.plugins.module_utils.preflight_connections import connections, probes


def main():
    module = AnsibleModule(
        argument_spec={"plan": {"type": "dict", "required": True}, "hosts": {"type": "list", "elements": "str"}},
        supports_check_mode=True,
    )
    plan, hosts = module.params["plan"], module.params["hosts"]
    pairs = connections(plan)
    inside = set(plan.get("hosts") or {}) if hosts is None else set(hosts)
    untested = [p for p in pairs if p["src"] not in inside or p["dst"] not in inside]
    module.exit_json(changed=False, pairs=pairs, untested=len(untested), hosts=probes(plan, pairs, hosts))


if __name__ == "__main__":
    main()
