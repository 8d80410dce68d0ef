#!/usr/bin/python
# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Apply a host's planned service files and start its units, in one round trip."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: service_units
short_description: Write a host's planned service files and start its systemd units in one step
version_added: 0.1.0
description:
  - Takes the host's slice of the plan for one stage (folders, configuration, environment, secret and
    unit files, rendered on the controller by the P(kimi_k3.serving.service_files#filter) filter) and
    does the whole job on the host at once.
  - Creates the folders, compares every file with what is on the host (content, mode, owner root) and
    writes only those that differ, atomically.
  - Reloads systemd once when a unit file changed (also when nothing starts, as when an upgrade is staged), then
    enables and starts the units given in O(start); a unit whose service had a file changed, or that is
    named in O(restart), is restarted.
  - Returns which services changed and why (the files of each), so the caller knows what must restart.
options:
  directories:
    description: Folders to create (owner root), each with its mode.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: The folder.
        type: path
        required: true
      mode:
        description: Its mode (octal string).
        type: str
        default: "0755"
  caches:
    description:
      - The compile caches of the services (a folder each, mounted into an engine's container), each with
        the key it must hold (the image). A folder whose stamp names another key is emptied before the
        units start (its service restarts anyway, since its unit changed); one without a stamp is kept and
        stamped. Returned in RV(cleared_caches).
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: The cache folder.
        type: path
        required: true
      key:
        description: What filled it (the image); a change empties it.
        type: str
        required: true
      service:
        description: The planned service the cache belongs to.
        type: str
        required: true
  start:
    description:
      - The units to enable and start, each with the service it runs. Empty only writes files.
      - A unit of a service whose files changed, or named in O(restart), is restarted instead (or
        reloaded, when only files with O(files[].change=reload) changed and it runs).
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The planned service.
        type: str
        required: true
      unit:
        description: Its systemd unit (without C(.service)).
        type: str
        required: true
      phase:
        description: Its start phase, C(node0) (starts first) or C(followers) (once every node 0 has started).
        type: str
        choices: [node0, followers]
        default: node0
      probe:
        description:
          - A read-only command (an argument list) that fails when what the unit set up is gone, e.g. a
            firewall table flushed by hand; the unit is then restarted although it is active. Run in
            check mode too.
        type: list
        elements: str
  phases:
    description: Start only the units of these start phases.
    type: list
    elements: str
    choices: [node0, followers]
    default: [node0, followers]
  restart:
    description: Services to restart even if none of their files changed (a node 0 whose follower went down).
    type: list
    elements: str
    default: []
  requires:
    description:
      - Paths that must exist on the host before anything is written (the program the units run, for a
        host runtime). A missing one fails the module with its message, changing nothing; also in check mode.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: The path.
        type: path
        required: true
      msg:
        description: The failure message when it does not exist (the host, the variable and the fix).
        type: str
        required: true
  programs:
    description:
      - Programs the units need (e.g. C(/usr/sbin/nft)). When one is missing, the module changes nothing
        and returns it in RV(missing_programs); its action plugin then runs the O(install) steps and
        calls the module again. On a host that has them, the whole job stays one round trip.
    type: list
    elements: path
    default: []
  install:
    description:
      - The steps that install the missing O(programs), each a module and its arguments (e.g.
        C(ansible.builtin.apt) with the package's name), run by the action plugin on this host in
        order, only when a program is missing; in check mode they run in check mode. Not read by
        the module itself.
    type: list
    elements: dict
    default: []
    suboptions:
      module: &step_module
        description: The module's fully qualified name.
        type: str
        required: true
      args: &step_args
        description: Its arguments.
        type: dict
        default: {}
      fallback:
        description:
          - Another module (and its arguments) run when this step fails, e.g. C(ansible.builtin.package)
            after C(ansible.builtin.apt) with options only apt has, on a host without apt.
        type: dict
        suboptions:
          module: *step_module
          args: *step_args
      skip_in_check_mode:
        description:
          - Not run in check mode, where the earlier steps installed nothing (e.g. disabling the service
            a package brings, which is not there yet).
        type: bool
        default: false
  wait_for:
    description:
      - Services on other hosts that the started ones depend on; their health URLs are polled, all at
        once, before anything is started (up to O(timeout)). Not polled in check mode.
    type: list
    elements: dict
    default: []
    suboptions: &health
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
        description: The plan's health entry (a mapping with C(url)), used when C(url) is not given.
        type: dict
  wait:
    description:
      - This host's services to wait for once the units are started, all at once, each healthy when
        its unit is active and its health URL answers 200; a unit that fails, stops or restarts after
        a crash fails the module at once with its journal's tail (up to O(timeout) again). Not polled in check mode.
    type: list
    elements: dict
    default: []
    suboptions: *health
  settle:
    description:
      - The services a later call for the other start phases would wait for. When this call changes nothing, O(wait)
        is empty and that call would enable, start, restart or reload nothing, each is checked once, and RV(settled)
        is true when every one is active and answers its health URL (the caller leaves the later call out).
    type: list
    elements: dict
    default: []
    suboptions: *health
extends_documentation_fragment:
  - kimi_k3.serving.health_wait
  - kimi_k3.serving.releases
  - kimi_k3.serving.planned_files
author: kimi_k3.serving maintainers (!UNKNOWN)
attributes:
  check_mode:
    support: full
    description: In check mode nothing is written, reloaded or started; the result says what would change.
  diff_mode:
    support: full
    description: A diff per changed file; the content of secret files is never shown.
  idempotent:
    support: full
    description: A second run with the same plan changes nothing.
"""

EXAMPLES = r"""
- name: Install this host's planned services and start the node 0 ones
  kimi_k3.serving.service_units:
    directories: "{{ files.directories }}"
    files: "{{ files.files }}"
    start: "{{ files.units }}"
    phases: [node0]
    secrets: "{{ files.secrets }}"
  vars:
    files: "{{ services | kimi_k3.serving.service_files(settings, k3_api_key, k3_admin_api_key) }}"

- name: Load the firewall's table, nftables installed first where it is missing
  kimi_k3.serving.service_units:
    programs: [/usr/sbin/nft]
    install:
      - module: ansible.builtin.package
        args: {name: nftables, state: present}
    files:
      - {path: /etc/kimi-k3/firewall.nft, content: "{{ table }}", service: firewall, validate: /usr/sbin/nft -c -f %s}
"""

RETURN = r"""
changed_services:
  description: The services with a changed file, sorted (they must restart to use them).
  type: list
  elements: str
  returned: always
created_folders:
  description: The folders created, or whose mode or owner were set.
  type: list
  elements: str
  returned: always
changed_files:
  description: Each changed file, with its service and what changed (content, mode, owner, created).
  type: list
  elements: dict
  returned: always
pending_services:
  description: The services of O(pending) still running an earlier release's files, or whose files change now.
  type: list
  elements: str
  returned: always
kept_releases:
  description: The services whose files were (or in check mode would be) kept as release O(release.id).
  type: list
  elements: str
  returned: always
cleared_caches:
  description:
    - The compile caches emptied (or in check mode to be) because their image changed, each with its service,
      path, the image that filled it (was), the new one (now) and the bytes it held.
  type: list
  elements: dict
  returned: always
reloaded:
  description: Whether systemd was (or in check mode would be) reloaded.
  type: bool
  returned: always
started:
  description: The units started (they were not running).
  type: list
  elements: str
  returned: always
restarted:
  description: The units restarted (a file changed, or asked for).
  type: list
  elements: str
  returned: always
reloaded_units:
  description: The running units reloaded (only files they read again on a reload changed).
  type: list
  elements: str
  returned: always
enabled:
  description: The units enabled (they were not).
  type: list
  elements: str
  returned: always
missing_programs:
  description: The O(programs) that are missing on the host (the module then changed nothing).
  type: list
  elements: str
  returned: always
installed:
  description: The O(install) steps the action plugin ran (each its module and whether it changed something).
  type: list
  elements: dict
  returned: when a program was missing
health:
  description: Per service of O(wait), its name, state (healthy, failed, stopped or timeout), and seconds.
  type: list
  elements: dict
  returned: always
settled:
  description: Whether the services of O(settle) were settled (always false without them and in check mode).
  type: bool
  returned: always
"""

import os
import re

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kimi_k3.serving.plugins.module_utils.compile_caches import CACHE_OPTIONS, apply_caches
from ansible_collections.kimi_k3.serving.plugins.module_utils.planned_files import (
    PLANNED_FILES_ARGS,
    apply_files,
    ensure_directory,
    validator,
)
from ansible_collections.kimi_k3.serving.plugins.module_utils.releases import RELEASE_OPTIONS, Keeper, owed_restarts
from ansible_collections.kimi_k3.serving.plugins.module_utils.service_wait import (
    SERVICE_OPTIONS,
    WAIT_OPTIONS,
    Wait,
    with_urls,
)
from ansible_collections.kimi_k3.serving.plugins.module_utils.unit_starts import (
    PHASES,
    START_OPTIONS,
    Systemd,
    later_phases_idle,
    run_starts,
)

# An install step's module and arguments (a step's fallback has the same two).
INSTALL_STEP = {"module": {"type": "str", "required": True}, "args": {"type": "dict", "default": {}}}


def _dicts(**options):
    """The argument spec of a list of dicts with these suboptions."""
    return {"type": "list", "elements": "dict", "default": [], "options": options}


def main():
    module = AnsibleModule(
        argument_spec={
            "directories": _dicts(path={"type": "path", "required": True}, mode={"type": "str", "default": "0755"}),
            **PLANNED_FILES_ARGS,
            "start": _dicts(**START_OPTIONS),
            "phases": {"type": "list", "elements": "str", "choices": PHASES, "default": PHASES},
            "restart": {"type": "list", "elements": "str", "default": []},
            "caches": _dicts(**CACHE_OPTIONS),
            "requires": _dicts(path={"type": "path", "required": True}, msg={"type": "str", "required": True}),
            "programs": {"type": "list", "elements": "path", "default": []},
            "install": _dicts(
                **INSTALL_STEP,
                fallback={"type": "dict", "options": INSTALL_STEP},
                skip_in_check_mode={"type": "bool", "default": False},
            ),
            **RELEASE_OPTIONS,
            "wait_for": _dicts(**SERVICE_OPTIONS),
            "wait": _dicts(**SERVICE_OPTIONS),
            "settle": _dicts(**SERVICE_OPTIONS),
            **WAIT_OPTIONS,
        },
        supports_check_mode=True,
    )
    check = module.check_mode
    missing = [r["msg"] for r in module.params["requires"] if not os.path.exists(r["path"])]
    if missing:
        module.fail_json(msg="\n".join(missing))
    absent = [path for path in module.params["programs"] if not os.path.exists(path)]
    if absent:
        module.exit_json(changed=False, missing_programs=absent)
    wait = Wait.from_params(module.run_command, module.params)
    if module.params["wait_for"] and not check:
        wait.poll(with_urls(module.params["wait_for"]), check_units=False)
    dirs_changed = [d["path"] for d in module.params["directories"] if ensure_directory(d["path"], d["mode"], check)]
    keeper = Keeper(module.params, check)
    try:
        keeper.adopt()
        changed_files, diffs = apply_files(module.params["files"], check, module._diff, validator(module))
        kept = keeper.keep({f["service"] for f in changed_files})
    except (OSError, ValueError, re.error) as exc:
        module.fail_json(msg="cannot write the planned files: %s" % exc, created_folders=dirs_changed)
    try:
        changed_caches, cleared_caches = apply_caches(module.params["caches"], check)
    except OSError as exc:
        module.fail_json(msg="cannot empty or stamp a compile cache: %s" % exc, created_folders=dirs_changed)
    changed_services = sorted({f["service"] for f in changed_files})
    reloaded = any(f["path"].endswith(".service") for f in changed_files)
    systemd = None
    if reloaded and not check:
        systemd = Systemd(module)
        systemd.run("daemon-reload")
    pending = owed_restarts(module.params, systemd or Systemd(module), changed_services)
    enable, begin, again, again_read = [], [], [], []
    if module.params["start"]:
        enable, begin, again, again_read = run_starts(module, systemd or Systemd(module), changed_files)
    for entry in changed_files:
        entry.pop("change", None)
    result = {
        "changed": bool(
            dirs_changed or changed_files or changed_caches or enable or begin or again or again_read or kept
        ),
        "created_folders": dirs_changed,
        "changed_services": changed_services,
        "changed_files": changed_files,
        "cleared_caches": cleared_caches,
        "pending_services": pending,
        "kept_releases": kept,
        "reloaded": reloaded,
        "enabled": enable,
        "started": begin,
        "restarted": again,
        "reloaded_units": again_read,
        "missing_programs": [],
    }
    if module._diff:
        result["diff"] = diffs
    services = with_urls(module.params["wait"])
    result["health"], failed = [], ""
    if services and not check:
        result["health"], result["elapsed"] = wait.poll(services)
        failed = wait.failures(services, result["health"])
    if failed:
        module.fail_json(msg=failed, **result)
    quiet = module.params["settle"] and not (check or result["changed"] or services)
    result["settled"] = bool(quiet and later_phases_idle(module, systemd or Systemd(module)))
    result["settled"] = result["settled"] and wait.healthy_now(module.params["settle"])
    module.exit_json(**result)


if __name__ == "__main__":
    main()
