#!/usr/bin/python
# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Documentation of the kimi_k3.serving.role_arguments action (the work: plugins/action/role_arguments.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: role_arguments
short_description: Check every role's variables on every host it runs on, once, on the controller
version_added: 0.2.0
description:
  - For each role and each of its hosts, the values the host has of the role's options (inventory, group and
    host variables, extra variables, facts; templated as the host sees them) are checked against the role's
    C(meta/argument_specs.yml) with the validator Ansible's own role check uses. The roles' defaults are the
    collection's and are not read; a value that cannot be templated yet (built from a role default or a later
    fact) is left to the role's own check.
  - Fails with every problem of every host, one sentence each naming the host, the role, the variable and the
    fix, before any host is changed. The playbooks that run it (site.yml, scale.yml, upgrade.yml, verify.yml)
    then start their roles without Ansible's check, a forked worker per host and role.
  - Runs on the controller only, in check mode too; contacts no host.
options:
  roles:
    description: Each role's name (a role of this collection) to the list of hosts it will run on.
    type: dict
    required: true
  only:
    description: The hosts of this run (C(ansible_play_hosts_all), under --limit the limited ones); the others are
      not checked. Unset checks every host of O(roles).
    type: list
    elements: str
author: kimi_k3.serving maintainers (!UNKNOWN)
attributes:
  check_mode:
    support: full
    description: It only reads the inventory, in check mode as well.
  diff_mode:
    support: none
    description: Nothing to show.
  idempotent:
    support: full
    description: It reads and changes nothing.
"""

EXAMPLES = r"""
- name: The roles' variables on every host, before anything changes
  kimi_k3.serving.role_arguments:
    roles:
      engine: "{{ groups['prefill'] + groups['decode'] }}"
      monitoring: "{{ groups['monitoring'] | default([]) }}"
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
problems:
  description: One sentence per problem (the host, the role, the validator's message and the fix).
  type: list
  elements: str
  returned: always
  sample:
    - >-
      host k3-sb-dp0: role engine: argument 'engine_health_timeout' is of type str and we were unable to convert
      to int. Fix: give engine_health_timeout a value of type int, in the inventory or with -e (roles/engine/README.md).
checked:
  description: How many hosts were checked.
  type: int
  returned: always
"""
