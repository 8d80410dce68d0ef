#!/usr/bin/python
# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Connections to the other hosts' short-lived listeners, and the clock; changes nothing."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: preflight_probe
short_description: Test the planned connections from this host, and compare its clock with the controller's
version_added: 0.1.0
description:
  - Connects to every target at once (threads), retrying while refused until O(timeout). The targets'
    hosts listen first (M(kimi_k3.serving.preflight_host) with its C(listen) option, one task on every host);
    run this module on every host in the next task.
  - The short-lived listener greets first, so a port answered by a running service (the collection's own
    unit) is only connected to; nothing is sent to it.
  - Compares this host's clock with O(controller_time), the controller's time when the task was sent (the
    host's time is taken when the module's process started, so the module's own start-up does not count).
options:
  host:
    description: This host's inventory name (told to the listeners; named in the problems).
    type: str
    required: true
  connect:
    description: Connections to make, each C({dst, ip, port, name, why}) (from M(kimi_k3.serving.preflight_pairs)).
    type: list
    elements: dict
    default: []
  timeout:
    description: Seconds every connection may take to go through.
    type: float
    default: 5
  held:
    description:
      - Each host's ports that its listener found held by a running service (the C(held) of
        M(kimi_k3.serving.preflight_host)'s C(listener)), by host name. A connection to one of them is made
        and closed at once, without waiting for the greeting only the short-lived listener sends.
    type: dict
    default: {}
  controller_time:
    description: The controller's clock (seconds since the epoch) when the task was sent; omit to skip the clock check.
    type: float
  clock_skew_max:
    description: Largest difference between this host's clock and the controller's, in seconds.
    type: float
    default: 2
  stop:
    description:
      - Instead, end this host's listener (C({port, token}) from M(kimi_k3.serving.preflight_host)'s C(listener))
        when a connection it waits for did not come.
    type: dict
extends_documentation_fragment:
  - kimi_k3.serving.attributes.read_only
author:
  - kimi_k3.serving maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Connect to the other hosts, and compare the clock with the controller's
  kimi_k3.serving.preflight_probe:
    host: "{{ inventory_hostname }}"
    connect: "{{ k3_pairs.hosts[inventory_hostname].connect }}"
    controller_time: "{{ now().timestamp() }}"
  register: k3_connect
"""

RETURN = r"""
problems:
  description: One line per problem, naming the host, what is wrong and the fix.
  returned: always
  type: list
  elements: str
  sample: ["host k3-sb-front: connection: TCP to k3-sb-prefill 10.77.0.14 port 8100 (prefill health) timed out after
           5.0 s (a firewall drops it or there is no route); needed because router waits for k3-sb-prefill/prefill
           to be healthy. Fix: allow TCP from k3-sb-front to 10.77.0.14 port 8100 (nftables/iptables, security
           groups, routes)"]
connections:
  description: Each target with C(ok), C(error) and C(answered_by) (the listener's host; null for a running service).
  returned: always
  type: list
  elements: dict
clock_skew:
  description: This host's clock minus the controller's, in seconds (null without O(controller_time)).
  returned: always
  type: float
  sample: 0.04
stopped:
  description: Whether the listener was there and was told to end (O(stop)).
  returned: when O(stop) is given
  type: bool
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kimi_k3.serving.plugins.module_utils.preflight_checks import check_clock
from ansible_collections.kimi_k3.serving.plugins.module_utils.preflight_common import messages
from ansible_collections.kimi_k3.serving.plugins.module_utils.preflight_connect import connect
from ansible_collections.kimi_k3.serving.plugins.module_utils.preflight_connections import connection_problems
from ansible_collections.kimi_k3.serving.plugins.module_utils.preflight_listener import stop_listener


def process_start_time():
    """Wall-clock time at which this process started (the module's start-up does not count)."""
    now = time.time()
    try:
        with open("/proc/self/stat", encoding="ascii") as handle:
            start_ticks = int(handle.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime", encoding="ascii") as handle:
            uptime = float(handle.read().split()[0])
        age = uptime - start_ticks / os.sysconf("SC_CLK_TCK")
        return now - max(0.0, age)
    except (OSError, ValueError, IndexError):
        return now


def main():
    started = process_start_time()
    module = AnsibleModule(
        argument_spec={
            "host": {"type": "str", "required": True},
            "connect": {"type": "list", "elements": "dict", "default": []},
            "timeout": {"type": "float", "default": 5},
            "held": {"type": "dict", "default": {}},
            "controller_time": {"type": "float"},
            "clock_skew_max": {"type": "float", "default": 2},
            "stop": {"type": "dict"},
        },
        supports_check_mode=True,
    )
    p = module.params
    if p["stop"]:
        stopped = stop_listener(p["stop"]["port"], p["stop"]["token"])
        module.exit_json(changed=False, stopped=stopped, connections=[], clock_skew=None, problems=[])
    results = connect(p["connect"], p["host"], p["timeout"], held=p["held"])
    problems = connection_problems(p["host"], results, p["timeout"])
    skew = None
    if p["controller_time"] is not None:
        skew = round(started - p["controller_time"], 3)
        problems += check_clock(p["host"], started, p["controller_time"], p["clock_skew_max"])
    module.exit_json(changed=False, connections=results, clock_skew=skew, problems=messages(problems))


if __name__ == "__main__":
    main()
