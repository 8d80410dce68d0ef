#!/usr/bin/python
# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Documentation of the kimi_k3.serving.plan action (the work happens in plugins/action/plan.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: plan
short_description: Plan a Kimi-K3 deployment from the inventory
version_added: 0.1.0
description:
  - Reads the C(router), C(metaservice), C(prefill), C(decode) and C(engine) groups and every host's
    C(k3_*) variables, applies the selected profile from the catalog (C(k3_profile)) and computes, once
    for the whole inventory, every service each host must run, with the exact argv, the exact
    environment, the image, the ports and the services that must be healthy first.
  - Refuses an impossible or dangerous plan before anything is written, with one message per problem
    naming the host, the variable and the fix.
  - Runs on the controller only; it connects to no host.
  - With O(dest), writes C(plan.json), C(summary.txt), C(report.html) and one launch script per service
    under C(scripts/<host>/<service>.sh), and removes launch scripts of services no longer planned.
  - C(report.html) is the plan as a person reads it, one self-contained page (no script, no external file).
    It lists the hosts with their addresses and groups, the services of each host (kind, unit, ports), the
    start order and the profile, and shows a picture of the cluster drawn by Graphviz (C(dot -Tsvg)), inline.
    The picture has the clients' entry, the front door, the prefill and decode pools with the KV-cache path
    between them and its connector, the data-parallel groups with their node 0 and followers, and the
    MetaService.
  - Without Graphviz's C(dot) on the controller the page is still written, with a note in the picture's
    place, and the task warns naming the package to install (C(graphviz)); the plan never fails for it.
options:
  dest:
    description:
      - Folder to write the plan into. Without it the plan is only returned.
    type: path
  profile_dir:
    description:
      - Folder holding the profile catalog. Defaults to the collection's C(profiles/).
    type: path
  release_dir:
    description:
      - Folder on the controller where the plan is kept as a release, when a playbook applies it
        (C(site.yml), C(upgrade.yml)) - C(<release_dir>/<id>/) with C(plan.json), C(variables.json)
        (the inventory's planning variables, keys shown as their count) and C(release.json) (when first
        applied, and by whom - the AWX user, else the controller's user). A release kept already is left
        as it is; nothing is written in check mode.
    type: path
  groups:
    description:
      - The inventory groups that make up the deployment.
    type: list
    elements: str
    default: [router, metaservice, prefill, decode, engine]
attributes:
  check_mode:
    support: full
    description: In check mode nothing is written; C(changed) tells whether files would change.
  diff_mode:
    support: full
    description: Shows the content change of every plan file.
  idempotent:
    support: full
    description: A second run with the same inventory writes nothing and reports no change (the report has no
      timestamp, and the same plan gives the same page and picture with the same Graphviz).
author:
  - kimi_k3.serving maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Plan the deployment and write it next to the inventory
  kimi_k3.serving.plan:
    dest: "{{ inventory_dir }}/plan"
  run_once: true
  delegate_to: localhost
  register: k3_plan

- name: Show which host runs what
  ansible.builtin.debug:
    msg: "{{ k3_plan.summary.splitlines() }}"

- name: Say where the page with the picture of the cluster is
  ansible.builtin.debug:
    msg: "open {{ k3_plan.report }} in a browser"
"""

RETURN = r"""
plan:
  description: The plan; the same document as C(plan.json).
  returned: success
  type: dict
  contains:
    profile:
      description: The profile's name.
      type: str
    variant:
      description: The profile's variant that C(k3_variant) selected; null for the profile as it stands.
      type: str
    endpoint:
      description: Where clients send requests (the router, the proxy or node 0).
      type: dict
    hosts:
      description: Per inventory host, its address (ip, the one other nodes use) and its services, each with name,
        kind, role, argv, env, image, ports, after, ranks, health and container.
      type: dict
release:
  description:
    - The plan's release - C(id) (the first 12 hex digits of the SHA-256 of the plan, the same for the
      same plan) and C(by) (who applies it); with O(release_dir) also C(at) (when it was first kept)
      and C(path) (its folder).
  returned: success
  type: dict
summary:
  description: A readable table of host, service, kind, role, ranks, ports and start order.
  returned: success
  type: str
dest:
  description: The absolute folder the plan was written to.
  returned: when O(dest) is set
  type: str
files:
  description: The files of the plan, relative to O(dest).
  returned: when O(dest) is set
  type: list
  elements: str
report:
  description: The absolute path of C(report.html), the plan as a person reads it.
  returned: when O(dest) is set
  type: str
problems:
  description: Every reason the inventory cannot be planned, each with host, variable, message and fix.
  returned: failure
  type: list
  elements: dict
"""
