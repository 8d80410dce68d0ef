#!/usr/bin/python
# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Stop, disable and remove a host's services and their files in one call."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: service_removal
short_description: Stop, disable and remove a host's services and their files in one call
version_added: 0.2.0
description:
  - The teardown of a host's services in one round trip - the units of O(units) whose unit file is
    installed are stopped and disabled (one systemctl call for all of them), their failed state is
    forgotten, their unit files and every path of O(paths) that exists are removed (a folder with what
    it holds), and systemd reloads once when a unit file went.
  - A unit or path that is already gone is not an error, so a second run changes nothing.
  - Nothing is restarted and nothing is written.
options:
  units:
    description: The systemd units to stop and disable (names without C(.service)).
    type: list
    elements: str
    default: []
  paths:
    description:
      - The other files and folders to remove (absolute paths), such as the
        M(kimi_k3.serving.service_units) files the C(kimi_k3.serving.service_paths) filter lists; the
        units' own files in O(unit_dir) go without being listed.
    type: list
    elements: path
    default: []
  unit_dir:
    description: Where the unit files are (a unit counts as installed when its file is there).
    type: path
    default: /etc/systemd/system
author: kimi_k3.serving maintainers (!UNKNOWN)
attributes:
  check_mode:
    support: full
    description: In check mode nothing stops and nothing is removed; the result says what would be.
  diff_mode:
    support: full
    description: The units and paths that go, as the diff's before.
  idempotent:
    support: full
    description: A second run finds nothing to stop or remove.
"""

EXAMPLES = r"""
- name: Remove the engine's unit, environment file and working folder
  kimi_k3.serving.service_removal:
    units: [k3-engine]
    paths:
      - /etc/kimi-k3/engine.env
      - /var/lib/kimi-k3/engine
"""

RETURN = r"""
stopped:
  description: The units that were (or in check mode would be) stopped and disabled - those installed.
  type: list
  elements: str
  returned: always
removed:
  description: The paths that were (or in check mode would be) removed - those that existed, the units' files first.
  type: list
  elements: str
  returned: always
reloaded:
  description: Whether systemd was reloaded (a unit file was removed).
  type: bool
  returned: always
"""

import os
import shutil

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kimi_k3.serving.plugins.module_utils.unit_starts import Systemd


def existing(paths):
    """The paths of ``paths`` that exist (a dangling link too), in their order, without repeats."""
    seen = []
    for path in paths:
        if path not in seen and os.path.lexists(path):
            seen.append(path)
    return seen


def remove(path):
    """Remove a file, a link or a folder with what it holds; a path already gone is no error."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


def stop_and_disable(systemd, units):
    """One call stops and disables every unit; a unit that stops as failed (a follower whose node 0
    went first) is forgotten, so that systemd does not list it once its file is gone."""
    names = [u + ".service" for u in units]
    systemd.run("disable", "--now", "--", *names)
    systemd.run("reset-failed", "--", *names, check=False)


def main():
    module = AnsibleModule(
        argument_spec={
            "units": {"type": "list", "elements": "str", "default": []},
            "paths": {"type": "list", "elements": "path", "default": []},
            "unit_dir": {"type": "path", "default": "/etc/systemd/system"},
        },
        supports_check_mode=True,
    )
    relative = [p for p in module.params["paths"] if not os.path.isabs(p)]
    if relative:
        module.fail_json(msg="paths: %s is not an absolute path. Fix: give every path from /." % relative[0])
    unit_files = {os.path.join(module.params["unit_dir"], u + ".service"): u for u in module.params["units"]}
    gone = existing(list(unit_files))
    stopped = [unit_files[f] for f in gone]
    removed = existing(gone + module.params["paths"])
    result = {"changed": bool(removed), "stopped": stopped, "removed": removed, "reloaded": bool(gone)}
    if module._diff:
        before = ["unit %s" % u for u in stopped] + removed
        result["diff"] = {"before": "".join(line + "\n" for line in before), "after": ""}
    if module.check_mode:
        module.exit_json(**result)
    systemd = Systemd(module)
    if stopped:
        stop_and_disable(systemd, stopped)
    try:
        for path in removed:
            remove(path)
    except OSError as exc:
        module.fail_json(msg="cannot remove %s: %s" % (exc.filename or "a path", exc.strerror or exc), **result)
    if gone:
        systemd.run("daemon-reload")
    module.exit_json(**result)


if __name__ == "__main__":
    main()
