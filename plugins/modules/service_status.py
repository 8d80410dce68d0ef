#!/usr/bin/python
# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Report on the planned services of a host: unit state, restarts, health, running argv, version."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: service_status
short_description: Report on the planned services of a host, and on the collection's units the plan no longer has
version_added: 0.1.0
description:
  - For each planned service, reads its systemd unit (state, restarts, main process), asks its health
    URL once, compares the running process's argv with the planned argv and reads which version runs
    (the image of a container, the package version in the host runtime's virtualenv, nginx's own for
    the front door).
  - With O(files), compares the services' planned files with the host's (content, mode, group), as
    M(kimi_k3.serving.service_units) does in check mode, and returns the services whose files differ in
    RV(drift), so that one call per host and role reads and compares.
  - With O(planned_units), lists the units on the host that the collection wrote (their first line says
    C(Managed by kimi_k3.serving)) and that are not among them.
  - Only reads; never fails on what it finds (the caller decides what is a problem).
options:
  services:
    description: The planned services of this host (entries of the plan's C(hosts[host].services)).
    type: list
    elements: dict
    required: true
  api_key:
    description: A bearer key sent with each health request. Never logged.
    type: str
    default: ""
  ca_path:
    description: CA file an https health URL's certificate is checked against; empty uses the system's CAs.
    type: str
    default: ""
  distributions:
    description: The Python distribution whose version a host-runtime service of each kind reports.
    type: dict
    default: {vllm: vllm, router: vllm-router, metaservice: memcache_hybrid}
  search_path:
    description: The folders the host runtime finds its programs in first (a virtualenv's bin), where versions are read.
    type: list
    elements: path
    default: []
  unit_dir:
    description: Where the collection writes its units.
    type: path
    default: /etc/systemd/system
  planned_units:
    description:
      - Every unit the plan gives this host; the collection's other units are returned in RV(unplanned).
      - Omitted, no unit is listed.
    type: list
    elements: str
  ignore_units:
    description: Units of the collection that are not planned services (the firewall's).
    type: list
    elements: str
    default: [k3-firewall]
  docker:
    description: The docker client, for services of the docker runtime.
    type: path
    default: /usr/bin/docker
  releases_dir:
    description: Where the host keeps each release's files (M(kimi_k3.serving.service_units)).
    type: path
    default: /var/lib/kimi-k3/releases
extends_documentation_fragment:
  - kimi_k3.serving.attributes.read_only
  - kimi_k3.serving.planned_files
author:
  - kimi_k3.serving maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Report on this host's planned services
  kimi_k3.serving.service_status:
    services: "{{ plan | kimi_k3.serving.host_services(inventory_hostname) | kimi_k3.serving.status_targets }}"
    planned_units: "{{ plan | kimi_k3.serving.host_services(inventory_hostname) | map(attribute='unit') | list }}"
  register: status
"""

RETURN = r"""
services:
  description: Per planned service, what runs.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The service.
      type: str
    unit:
      description: Its systemd unit.
      type: str
    active:
      description: The unit's ActiveState/SubState (e.g. C(active/running), C(failed/failed), C(inactive/dead)).
      type: str
    restarts:
      description: How often systemd restarted it after a crash (NRestarts).
      type: int
    pid:
      description: Its main process (0 when none).
      type: int
    health:
      description: The HTTP status of its health URL, C(null) when nothing answered or it has none.
      type: int
    has_health:
      description: Whether the plan gives it a health URL (headless followers have none).
      type: bool
    argv_matches:
      description: Whether the running process's argv is the planned argv (C(null) when nothing runs).
      type: bool
    reload_pending:
      description: The unit file changed on disk and systemd has not reloaded it.
      type: bool
    version:
      description: >-
        The image (docker), the package version (host runtime) or the program's own (nginx -v) that
        runs, when known.
      type: str
    release:
      description: The release the service's files are (C(null) when the host keeps none for it).
      type: str
    release_at:
      description: When that release was applied (UTC).
      type: str
    release_by:
      description: Who applied it.
      type: str
    release_pending:
      description: The process started before its files last changed - it still runs an earlier release.
      type: bool
drift:
  description: The services of O(services) whose planned files differ from the host's (empty without O(files)).
  returned: always
  type: list
  elements: str
unplanned:
  description: The collection's units on this host that are not in O(planned_units) (empty without it).
  returned: always
  type: list
  elements: str
"""

import os
import re

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kimi_k3.serving.plugins.module_utils.planned_files import PLANNED_FILES_ARGS, apply_files
from ansible_collections.kimi_k3.serving.plugins.module_utils.releases import Releases
from ansible_collections.kimi_k3.serving.plugins.module_utils.service_probe import (
    argv_runs,
    distribution_version,
    http_status,
    process_argv,
    unit_properties,
)
from ansible_collections.kimi_k3.serving.plugins.module_utils.unit_starts import stamp_seconds

MARK = "# Managed by kimi_k3.serving"
# Programs that are no Python distribution: the flag that prints their version, and how to read it.
PROGRAM_VERSIONS = {"front_door": ("-v", r"nginx/(\S+)")}


def service_report(module, svc):
    props = unit_properties(module.run_command, svc["unit"])
    pid = int(props.get("MainPID", "0") or 0)
    running = process_argv(pid) if pid else []
    url = (svc.get("health") or {}).get("url")
    health = http_status(url, module.params["api_key"], module.params["ca_path"]) if url else None
    runtime = svc.get("runtime", "host")
    version = None
    if runtime == "docker":
        rc, out, _err = module.run_command(
            [module.params["docker"], "inspect", "--format", "{{.Config.Image}}", svc["unit"]], check_rc=False
        )
        version = out.strip() if rc == 0 else None
    elif running and svc.get("kind") in PROGRAM_VERSIONS:
        flag, pattern = PROGRAM_VERSIONS[svc["kind"]]
        rc, out, err = module.run_command([(svc.get("argv") or ["nginx"])[0], flag], check_rc=False)
        found = re.search(pattern, out + err) if rc == 0 else None
        version = found.group(1) if found else None
    elif running:
        # The runtime's folders (a virtualenv's bin), then the program's own.
        dirs = list(module.params["search_path"]) + [os.path.dirname(p) for p in running[:2] if os.path.isabs(p)]
        version = distribution_version(dirs, module.params["distributions"].get(svc.get("kind")))
    return {
        "name": svc["name"],
        "unit": svc["unit"],
        "active": "%s/%s" % (props.get("ActiveState", "unknown"), props.get("SubState", "unknown")),
        "restarts": int(props.get("NRestarts", "0") or 0),
        "pid": pid,
        "health": health,
        "has_health": bool(url),
        "argv_matches": argv_runs(running, svc.get("argv") or [], runtime) if running else None,
        "reload_pending": props.get("NeedDaemonReload") == "yes",
        "version": version,
        **release_report(module, svc, props),
    }


def release_report(module, svc, props):
    """The release the service's files are (kept by service_units), and whether its process predates them."""
    store = Releases(module.params["releases_dir"])
    current = store.current(svc["name"]) or {}
    written = store.written(svc["name"])
    since = stamp_seconds(props.get("ExecMainStartTimestamp", ""))
    return {
        "release": current.get("release"),
        "release_at": current.get("at"),
        "release_by": current.get("by"),
        "release_pending": since is not None and written is not None and since < written,
    }


def unplanned_units(unit_dir, planned, ignore):
    out = []
    try:
        names = sorted(os.listdir(unit_dir))
    except OSError:
        return out
    for name in names:
        unit, ext = os.path.splitext(name)
        if ext != ".service" or unit in planned or unit in ignore:
            continue
        try:
            with open(os.path.join(unit_dir, name), encoding="utf-8", errors="replace") as handle:
                first = handle.readline()
        except OSError:
            continue
        if first.startswith(MARK):
            out.append(unit)
    return out


def main():
    module = AnsibleModule(
        argument_spec={
            "services": {"type": "list", "elements": "dict", "required": True},
            "api_key": {"type": "str", "default": "", "no_log": True},
            "ca_path": {"type": "str", "default": ""},
            "distributions": {
                "type": "dict",
                "default": {"vllm": "vllm", "router": "vllm-router", "metaservice": "memcache_hybrid"},
            },
            "search_path": {"type": "list", "elements": "path", "default": []},
            "unit_dir": {"type": "path", "default": "/etc/systemd/system"},
            "planned_units": {"type": "list", "elements": "str"},
            "ignore_units": {"type": "list", "elements": "str", "default": ["k3-firewall"]},
            "docker": {"type": "path", "default": "/usr/bin/docker"},
            "releases_dir": {"type": "path", "default": "/var/lib/kimi-k3/releases"},
            **PLANNED_FILES_ARGS,
        },
        supports_check_mode=True,
    )
    services = module.params["services"]
    reports = [service_report(module, svc) for svc in services]
    try:
        # Compared as service_units compares in check mode: nothing is written, no check command runs.
        differ, _diffs = apply_files(module.params["files"], True, False)
    except (OSError, ValueError, re.error) as exc:
        module.fail_json(msg="cannot compare the planned files: %s" % exc, services=reports)
    unplanned = []
    if module.params["planned_units"] is not None:
        unplanned = unplanned_units(
            module.params["unit_dir"], set(module.params["planned_units"]), set(module.params["ignore_units"])
        )
    drift = sorted({entry["service"] for entry in differ})
    module.exit_json(changed=False, services=reports, drift=drift, unplanned=unplanned)


if __name__ == "__main__":
    main()
