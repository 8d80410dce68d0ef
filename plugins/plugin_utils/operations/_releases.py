# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Releases on the controller: every plan site.yml or upgrade.yml applies, kept with what made it.

A release's id is the plan's content (the first 12 hex digits of the SHA-256 of its canonical JSON),
so the same inventory gives the same release wherever and whenever it is planned. Its folder under
``k3_plan_release_dir`` holds ``plan.json``, ``variables.json`` (the inventory's variables that made the
plan, per host, keys shown as their count only) and ``release.json`` (the id, when it was first
applied and by whom). Each host keeps its own services' files per release (module_utils/releases.py).
"""

from __future__ import annotations

import getpass
import hashlib
import json
import os
import socket
import tempfile
import time

ID_LENGTH = 12


def release_id(plan):
    """The release id of ``plan``: its content's digest, the same for the same plan."""
    text = json.dumps(plan, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:ID_LENGTH]


def applied_by(task_vars):
    """Who applies it: the AWX user launching the job, else the controller's user at its host name."""
    for name in ("awx_user_name", "tower_user_name"):
        if task_vars.get(name):
            return "%s (AWX)" % task_vars[name]
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid())
    return "%s@%s" % (user, socket.gethostname())


def redacted(hostvars, secret_names):
    """The inventory's planning variables per host, each secret shown as how many keys it holds."""
    out = {}
    for host, values in hostvars.items():
        out[host] = {}
        for name, value in sorted(values.items()):
            if name in secret_names:
                count = 1 if isinstance(value, str) else len(value or [])
                value = "(secret: %d key%s)" % (count, "" if count == 1 else "s")
            out[host][name] = value
    return out


def _write(path, data):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".k3release.")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(data, indent=1, sort_keys=True, default=str) + "\n")
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def record(folder, plan, variables, by, check_mode=False):
    """Keep ``plan`` as a release under ``folder`` (once: a release already kept is left as it is).

    Returns ``(release, changed)``: ``release`` is ``{id, at, by, path}``. Raises OSError.
    """
    rid = release_id(plan)
    path = os.path.join(folder, rid)
    known = os.path.join(path, "release.json")
    if os.path.exists(known):
        with open(known, encoding="utf-8") as handle:
            kept = json.load(handle)
        return dict(kept, path=path), False
    release = {"id": rid, "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "by": by}
    if not check_mode:
        os.makedirs(path, mode=0o700, exist_ok=True)
        _write(os.path.join(path, "plan.json"), plan)
        _write(os.path.join(path, "variables.json"), variables)
        _write(known, release)
    return dict(release, path=path), True


def history(folder):
    """The kept releases, oldest first: ``[{id, at, by}]`` (folders without a record are left out)."""
    out = []
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        try:
            with open(os.path.join(folder, name, "release.json"), encoding="utf-8") as handle:
                out.append(json.load(handle))
        except (OSError, ValueError):
            continue
    return sorted(out, key=lambda r: r.get("at", ""))


def moves(results):
    """A line per engine of a ``service_releases`` run: ``[[host, result], ...]`` (a skipped host's
    result has no ``services``). Each says the release it goes back to, or why it stays."""
    lines = []
    for host, result in results or []:
        for entry in (result or {}).get("services") or []:
            name = "%s/%s" % (host, entry["name"])
            if entry.get("files"):
                lines.append("%s: back to release %s (%d file(s))" % (name, entry.get("target"), len(entry["files"])))
            elif entry.get("missing"):
                lines.append(
                    "%s: keeps release %s (it has no such release; kept: %s)"
                    % (name, entry.get("release"), ", ".join(entry.get("kept") or []) or "none")
                )
            elif entry.get("target") is None:
                lines.append("%s: stays on release %s (no release before it is kept)" % (name, entry.get("release")))
            else:
                lines.append("%s: already on release %s" % (name, entry.get("release")))
    return lines or ["no engine keeps a release on these hosts"]
