#!/usr/bin/python
# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Report a host's kept releases, or bring back the files of an earlier one."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: service_releases
short_description: Report the releases a host's services run, or restore the files of an earlier release
version_added: 0.2.0
description:
  - Reads the releases M(kimi_k3.serving.service_units) keeps under O(releases_dir), one folder per
    service and release.
  - With O(state=report), says for each service which release its files are, when and by whom it was
    applied, the releases kept, and whether the unit still runs an earlier one (it started before the
    files changed).
  - With O(state=rollback), writes back the files of the release before each service's newest (or of
    O(release) when given), where they differ, and reloads systemd once when a unit file changed. It
    restarts nothing - the caller rolls the services that changed, group by group. Keys are never kept
    in a release - a line holding one is taken from the live file, so a rotated key does not come back.
  - A service whose target release is its current one changes nothing (a second rollback is a no-op).
  - A service whose process predates its files (an upgrade staged them but never restarted it) still runs the
    release restored - its files get back the times they had, so it owes no restart.
options:
  services:
    description:
      - The host's planned services to look at, each a mapping with at least C(name) (the planned service)
        and C(unit) (its systemd unit, without C(.service)) - the plan's service entries as they are.
    type: list
    elements: dict
    required: true
  state:
    description: C(report) reads only; C(rollback) restores files.
    type: str
    choices: [report, rollback]
    default: report
  release:
    description:
      - The release to restore (its id). A service that does not keep it is left as it is and named in
        C(missing) in RV(services). Without it, each service gets the release before its newest.
    type: str
  releases_dir:
    description: Where the releases are kept on the host.
    type: path
    default: /var/lib/kimi-k3/releases
author: kimi_k3.serving maintainers (!UNKNOWN)
attributes:
  check_mode:
    support: full
    description: In check mode nothing is written; the result says which files would be.
  diff_mode:
    support: none
    description: No diff is shown.
  idempotent:
    support: full
    description: A second rollback to the same release changes nothing.
"""

EXAMPLES = r"""
- name: Which release each service runs
  kimi_k3.serving.service_releases:
    services: [{name: prefill, unit: k3-prefill}]
  register: releases

- name: Back to the release before the newest (the units restart later, rolled)
  kimi_k3.serving.service_releases:
    services: [{name: prefill, unit: k3-prefill}]
    state: rollback
"""

RETURN = r"""
services:
  description:
    - Per service - C(name), C(release) (its files' release, None when none is kept), C(at) and C(by)
      (when and by whom it was applied), C(kept) (the kept release ids, oldest first), C(pending) (the
      unit started before its files last changed, so it still runs an earlier release), and with
      O(state=rollback) C(target) (the release restored, None when there is none), C(files) (the paths
      written), C(restart) (it must restart to run them) and C(missing) (O(release) is not kept for it).
  type: list
  elements: dict
  returned: always
changed_services:
  description:
    - The services whose files were (or in check mode would be) restored and that must restart for them (not
      those whose process still runs the release restored).
  type: list
  elements: str
  returned: always
reloaded:
  description: Whether systemd was reloaded (a unit file was restored).
  type: bool
  returned: always
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kimi_k3.serving.plugins.module_utils.releases import Releases
from ansible_collections.kimi_k3.serving.plugins.module_utils.unit_starts import Systemd


def _report(store, asked, started):
    mark = store.current(asked["name"]) or {}
    since, written = started.get(asked["unit"]), store.written(asked["name"])
    return {
        "name": asked["name"],
        "release": mark.get("release"),
        "at": mark.get("at"),
        "by": mark.get("by"),
        "kept": [m["release"] for m in store.kept(asked["name"])],
        "pending": since is not None and written is not None and since < written,
    }


def _rollback(store, entry, wanted, check):
    goal = store.target(entry["name"], wanted)
    entry["target"] = goal["release"] if goal else None
    entry["missing"] = bool(wanted and not goal)
    entry["files"] = []
    entry["restart"] = False
    if goal and goal["release"] != entry["release"]:
        # A process older than its files (an upgrade staged that never restarted it) runs the release restored.
        entry["files"] = store.restore(entry["name"], goal, check, still_runs=entry["pending"])
        entry["restart"] = bool(entry["files"]) and not entry["pending"]
        if not check:
            entry["release"], entry["at"], entry["by"] = goal["release"], goal["at"], goal.get("by")
    return entry


def main():
    module = AnsibleModule(
        argument_spec={
            "services": {"type": "list", "elements": "dict", "required": True},
            "state": {"type": "str", "choices": ["report", "rollback"], "default": "report"},
            "release": {"type": "str"},
            "releases_dir": {"type": "path", "default": "/var/lib/kimi-k3/releases"},
        },
        supports_check_mode=True,
    )
    store = Releases(module.params["releases_dir"])
    systemd = Systemd(module)
    services = module.params["services"]
    bad = [s for s in services if not s.get("name") or not s.get("unit")]
    if bad:
        module.fail_json(msg="every service needs a name and a unit (got %s)" % bad[0])
    started = systemd.started([s["unit"] for s in services]) if services else {}
    out = [_report(store, s, started) for s in services]
    try:
        if module.params["state"] == "rollback":
            out = [_rollback(store, entry, module.params["release"], module.check_mode) for entry in out]
    except OSError as exc:
        module.fail_json(msg="cannot restore a release's files: %s" % exc, services=out)
    changed = sorted(e["name"] for e in out if e.get("restart"))
    written = any(e.get("files") for e in out)
    reloaded = any(path.endswith(".service") for e in out for path in e.get("files", []))
    if reloaded and not module.check_mode:
        systemd.run("daemon-reload")
    module.exit_json(changed=written, services=out, changed_services=changed, reloaded=reloaded)


if __name__ == "__main__":
    main()
