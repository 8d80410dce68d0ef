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
  files:
    description: The files to write. Their folders must exist (or be listed in O(directories)).
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: The file.
        type: path
        required: true
      content:
        description: Its whole content.
        type: str
        required: true
      mode:
        description: Its mode (octal string).
        type: str
        default: "0644"
      service:
        description: The planned service the file belongs to (a change restarts it).
        type: str
        required: true
      secret:
        description: The file holds keys; a diff shows that it changed, never its content.
        type: bool
        default: false
      validate:
        description:
          - A command that checks the new content before it replaces the file (C(%s) is the new
            content's temporary path), e.g. C(/usr/sbin/nft -c -f %s). A refusal fails the module and
            leaves the file as it was.
        type: str
  start:
    description:
      - The units to enable and start, each with the service it runs. Empty only writes files.
      - A unit of a service whose files changed, or named in O(restart), is restarted instead.
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
  secrets:
    description:
      - The key values the files hold; each is masked wherever it would show in the module's output.
    type: list
    elements: str
    default: []
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
enabled:
  description: The units enabled (they were not).
  type: list
  elements: str
  returned: always
"""

import os
import shlex
import tempfile

from ansible.module_utils.basic import AnsibleModule

SECRET_SHOWN = "(secret file: its content is not shown)\n"


def _mode(text):
    return int(str(text), 8)


def _read(path):
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def file_changes(path, content, mode):
    """What differs between the host's ``path`` and the planned file: a list of reasons."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return ["created"]
    reasons = []
    if _read(path) != content.encode("utf-8"):
        reasons.append("content")
    if (st.st_mode & 0o7777) != _mode(mode):
        reasons.append("mode")
    if st.st_uid != 0 or st.st_gid != 0:
        reasons.append("owner")
    return reasons


def write_file(path, content, mode):
    """Write ``content`` to ``path`` atomically, owned by root with ``mode`` from the start."""
    folder = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".k3-")
    try:
        os.fchmod(fd, _mode(mode))
        os.fchown(fd, 0, 0)
        with os.fdopen(fd, "wb") as handle:
            handle.write(content.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def ensure_directory(path, mode, check):
    """Create ``path`` and missing parents (owner root, ``mode``; parents 0755), as ``mkdir -p`` does.

    True when it was (or would be) created or changed.
    """
    if not os.path.isdir(path):
        if not check:
            os.makedirs(path, 0o755, exist_ok=True)
            os.chown(path, 0, 0)
            os.chmod(path, _mode(mode))
        return True
    st = os.stat(path)
    if (st.st_mode & 0o7777) != _mode(mode) or st.st_uid != 0 or st.st_gid != 0:
        if not check:
            os.chown(path, 0, 0)
            os.chmod(path, _mode(mode))
        return True
    return False


def file_diff(item, reasons):
    """The diff entry of one changed file; a secret file's content is replaced by a note."""
    before = _read(item["path"])
    before = "" if before is None else before.decode("utf-8", "replace")
    after = item["content"]
    if item["secret"]:
        before = SECRET_SHOWN if "created" not in reasons else ""
        after = SECRET_SHOWN
    header = "%s (%s)" % (item["path"], ", ".join(reasons))
    return {"before_header": header, "after_header": header, "before": before, "after": after}


def apply_files(items, check, want_diff, validate=None):
    """Write what differs; returns (changed file entries, diffs). ``validate(item)`` checks the new
    content of an item with a ``validate`` command before it is written (also in check mode)."""
    changed, diffs = [], []
    for item in items:
        reasons = file_changes(item["path"], item["content"], item["mode"])
        if not reasons:
            continue
        if want_diff:
            diffs.append(file_diff(item, reasons))
        if validate and item.get("validate") and {"content", "created"} & set(reasons):
            validate(item)
        if not check:
            if not os.path.isdir(os.path.dirname(item["path"])):
                raise OSError("%s: its folder does not exist" % item["path"])
            write_file(item["path"], item["content"], item["mode"])
        changed.append({"path": item["path"], "service": item["service"], "changes": reasons})
    return changed, diffs


def validator(module):
    """``validate(item)``: run the item's validate command on its new content in a temporary file."""

    def validate(item):
        fd, tmp = tempfile.mkstemp(prefix=".k3-validate-")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(item["content"].encode("utf-8"))
            argv = shlex.split(item["validate"].replace("%s", shlex.quote(tmp)))
            rc, out, err = module.run_command(argv)
        finally:
            os.unlink(tmp)
        if rc != 0:
            module.fail_json(
                msg="%s: the new content was refused by %s (rc=%s): %s"
                % (item["path"], item["validate"].split()[0], rc, (err or out).strip())
            )

    return validate


class Systemd:
    """The systemctl calls the module makes (one per kind of action, every unit at once)."""

    def __init__(self, module):
        self.module = module
        self.systemctl = module.get_bin_path("systemctl", required=True)

    def run(self, *args):
        rc, out, err = self.module.run_command([self.systemctl] + list(args))
        if rc != 0:
            self.module.fail_json(msg="systemctl %s failed (rc=%s): %s" % (" ".join(args), rc, (err or out).strip()))
        return out

    def states(self, units):
        """``{unit: (ActiveState, UnitFileState)}`` of ``units``, read in one call."""
        names = [u + ".service" for u in units]
        out = self.run("show", "--property=Id,ActiveState,UnitFileState", "--", *names)
        states, current = {}, {}
        for line in (out or "").splitlines() + [""]:
            if not line.strip():
                if current.get("Id"):
                    states[current["Id"][: -len(".service")]] = (
                        current.get("ActiveState", ""),
                        current.get("UnitFileState", ""),
                    )
                current = {}
                continue
            key, value = line.split("=", 1) if "=" in line else (line, "")
            current[key] = value
        return states


def start_plan(units, states, restart):
    """Which units to enable, start and restart: ``(enable, start, restart)`` lists.

    ``restart``: the units to restart (a file of theirs changed, asked for, or their probe failed)."""
    enable, start, again = [], [], []
    for unit in units:
        active, file_state = states.get(unit, ("", ""))
        if file_state != "enabled":
            enable.append(unit)
        if unit in restart:
            again.append(unit)
        elif active not in ("active", "activating", "reloading"):
            start.append(unit)
    return enable, start, again


def run_starts(module, systemd, changed_services):
    """Enable, start and restart the units of the selected phases; returns (enable, start, restart)."""
    selected = [item for item in module.params["start"] if item["phase"] in module.params["phases"]]
    if not selected:
        return [], [], []
    wanted = [item["unit"] for item in selected]
    again = set(module.params["restart"]) | set(changed_services)
    restart = {item["unit"] for item in selected if item["name"] in again}
    for item in selected:
        if item.get("probe") and item["unit"] not in restart:
            if module.run_command(item["probe"])[0] != 0:
                restart.add(item["unit"])
    # systemctl show answers for a unit that is not written yet too (in check mode): inactive, no file state.
    enable, begin, again = start_plan(wanted, systemd.states(wanted), restart)
    if not module.check_mode:
        if enable:
            systemd.run("enable", "--", *[u + ".service" for u in enable])
        if begin:
            systemd.run("start", "--", *[u + ".service" for u in begin])
        if again:
            systemd.run("restart", "--", *[u + ".service" for u in again])
    return enable, begin, again


def _dicts(**options):
    """The argument spec of a list of dicts with these suboptions."""
    return {"type": "list", "elements": "dict", "default": [], "options": options}


def main():
    module = AnsibleModule(
        argument_spec={
            "directories": _dicts(path={"type": "path", "required": True}, mode={"type": "str", "default": "0755"}),
            "files": _dicts(
                path={"type": "path", "required": True},
                content={"type": "str", "required": True},
                mode={"type": "str", "default": "0644"},
                service={"type": "str", "required": True},
                secret={"type": "bool", "default": False},
                validate={"type": "str"},
            ),
            "start": _dicts(
                name={"type": "str", "required": True},
                unit={"type": "str", "required": True},
                phase={"type": "str", "choices": ["node0", "followers"], "default": "node0"},
                probe={"type": "list", "elements": "str"},
            ),
            "phases": {
                "type": "list",
                "elements": "str",
                "choices": ["node0", "followers"],
                "default": ["node0", "followers"],
            },
            "restart": {"type": "list", "elements": "str", "default": []},
            "secrets": {"type": "list", "elements": "str", "default": [], "no_log": True},
        },
        supports_check_mode=True,
    )
    check = module.check_mode
    dirs_changed = [d["path"] for d in module.params["directories"] if ensure_directory(d["path"], d["mode"], check)]
    try:
        changed_files, diffs = apply_files(module.params["files"], check, module._diff, validator(module))
    except OSError as exc:
        module.fail_json(msg="cannot write the planned files: %s" % exc, created_folders=dirs_changed)
    changed_services = sorted({f["service"] for f in changed_files})
    reloaded = any(f["path"].endswith(".service") for f in changed_files)
    systemd = None
    if reloaded and not check:
        systemd = Systemd(module)
        systemd.run("daemon-reload")
    enable, begin, again = [], [], []
    if module.params["start"]:
        enable, begin, again = run_starts(module, systemd or Systemd(module), changed_services)
    result = {
        "changed": bool(dirs_changed or changed_files or enable or begin or again),
        "created_folders": dirs_changed,
        "changed_services": changed_services,
        "changed_files": changed_files,
        "reloaded": reloaded,
        "enabled": enable,
        "started": begin,
        "restarted": again,
    }
    if module._diff:
        result["diff"] = diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
