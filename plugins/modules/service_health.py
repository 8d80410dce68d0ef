#!/usr/bin/python
# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Wait, concurrently, until planned services answer their health URL; fail fast on a crashed unit."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: service_health
short_description: Wait until planned services are healthy, or show why not
version_added: 0.1.0
description:
  - Polls every given service at once, so the waits of several services on one host overlap.
  - A service is healthy when its health URL answers HTTP 200.
  - A service fails as soon as its systemd unit has failed, has stopped, or restarted after a crash;
    the module then returns the tail of the unit's journal and fails naming the service.
  - Services without a URL (headless followers) only need their unit to be active.
options:
  services:
    description: The services to wait for.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: The service's name in the plan.
        type: str
        required: true
      unit:
        description: The systemd unit running it.
        type: str
        required: true
      url:
        description: Its health URL; omitted for services without an HTTP server.
        type: str
      health:
        description: The plan's health entry (a mapping with C(url)), used when O(services[].url) is not given.
        type: dict
  require_active:
    description: Also fail when a unit is not active (a stopped service, as opposed to one still starting).
    type: bool
    default: true
  check_units:
    description:
      - Watch each service's systemd unit on this host (fail fast, journal tail).
      - Set to false to only poll the URLs, for services that run on other hosts.
    type: bool
    default: true
notes:
  - Health URLs are read over a keep-alive HTTP/1.1 connection; the memcache MetaService does not send
    the body of its /health answer to clients that ask to close the connection.
attributes:
  check_mode:
    support: full
    description: In check mode nothing is polled and nothing is reported changed.
  diff_mode:
    support: none
    description: It only reads; there is no change to show.
  idempotent:
    support: full
    description: Only reads; never changes anything.
extends_documentation_fragment:
  - kimi_k3.serving.health_wait
author:
  - kimi_k3.serving maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Wait for the engines of this host
  kimi_k3.serving.service_health:
    services:
      - name: prefill
        unit: k3-prefill
        url: http://10.0.0.11:6100/health
    timeout: 1800
"""

RETURN = r"""
services:
  description: Per service, its final state.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The service.
      type: str
    healthy:
      description: Whether it answered its health URL (or is active, for services without one).
      type: bool
    state:
      description: healthy, failed, stopped or timeout.
      type: str
    seconds:
      description: Seconds until it became healthy or failed.
      type: float
    journal:
      description: The tail of its journal, for a service that did not become healthy.
      type: str
elapsed:
  description: Seconds the whole wait took.
  returned: always
  type: float
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kimi_k3.serving.plugins.module_utils.service_wait import (
    SERVICE_OPTIONS,
    WAIT_OPTIONS,
    Wait,
    with_urls,
)


def main():
    module = AnsibleModule(
        argument_spec={
            "services": {
                "type": "list",
                "elements": "dict",
                "required": True,
                "options": SERVICE_OPTIONS,
            },
            **WAIT_OPTIONS,
            "require_active": {"type": "bool", "default": True},
            "check_units": {"type": "bool", "default": True},
        },
        supports_check_mode=True,
    )
    services = with_urls(module.params["services"])
    if module.check_mode or not services:
        module.exit_json(changed=False, services=[], elapsed=0.0)
    params = module.params
    wait = Wait.from_params(module.run_command, params)
    results, elapsed = wait.poll(services, params["check_units"], params["require_active"])
    failed = wait.failures(services, results)
    if failed:
        module.fail_json(msg=failed, services=results, elapsed=elapsed)
    module.exit_json(changed=False, services=results, elapsed=elapsed)


if __name__ == "__main__":
    main()
