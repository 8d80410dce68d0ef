# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""A host's releases: the files each planned service had in each release it ran, kept beside the live ones.

A release is the plan that wrote a service's files (its id is the plan's content, computed on the
controller). Whenever the service_units module changes a service's files it copies them, as they
now are, into ``<releases_dir>/<service>/<release>/`` (folders 0700, copies 0600, a manifest with
each file's path, mode and group) and points ``<service>/current.json`` at that release. The
``service_releases`` module restores the files of an earlier release from there.

Keys are never kept: in a secret file (an environment file with keys) a line holding a key is kept
as its name only, and a restore takes that line from the live file, so a rollback brings back the
configuration of a release, never a key that was rotated out since. A secret file with a key on a
line that has no name (a file of keys) is not restored at all: it stays as it is.

A rollback goes to the release before the newest; the release it leaves is marked undone and no
longer counts (a failed canary's release, or files staged for an upgrade that stopped), so a second
rollback changes nothing and a rollback after a failed upgrade still reaches the release before.
"""

from __future__ import annotations

import grp
import json
import os
import shutil
import time

from ansible_collections.kimi_k3.serving.plugins.module_utils.planned_files import _read, file_changes, write_file

# The options of the modules that keep releases (doc_fragments/releases.py documents them).
RELEASE_OPTIONS = {
    "release": {
        "type": "dict",
        "options": {"id": {"type": "str", "required": True}, "by": {"type": "str", "default": ""}},
    },
    "releases_dir": {"type": "path", "default": "/var/lib/kimi-k3/releases"},
    "releases_keep": {"type": "int", "default": 3},
    "pending": {
        "type": "list",
        "elements": "dict",
        "default": [],
        "options": {
            "name": {"type": "str", "required": True},
            "unit": {"type": "str", "required": True},
            "phase": {"type": "str", "choices": ["node0", "followers"]},
        },
    },
}
CURRENT = "current.json"
MANIFEST = "manifest.json"
# Before the collection kept releases: the files found on the host, adopted under this name.
UNRECORDED = "unrecorded"


def _stamp(seconds):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def _load(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (FileNotFoundError, ValueError):
        return None


def _dump(path, data):
    write_file(path, json.dumps(data, indent=1, sort_keys=True) + "\n", "0600")


def _folder(path):
    if not os.path.isdir(path):
        os.makedirs(path, 0o700, exist_ok=True)
    os.chmod(path, 0o700)


def mask(text, secrets):
    """``(kept text, {line index: name})``: each line holding one of ``secrets`` is cut to ``NAME=``
    (its name kept at that index); a key line without a name makes the index's name None."""
    lines = text.splitlines(keepends=True)
    masked = {}
    for index, line in enumerate(lines):
        if any(s and s in line for s in secrets):
            name = line.split("=", 1)[0] if "=" in line else None
            masked[str(index)] = name
            lines[index] = (name + "=\n") if name is not None else "\n"
    return "".join(lines), masked


def unmask(kept, masked, live):
    """The restored text: each masked line taken from the ``live`` text's line of the same name
    (dropped when the live file has none)."""
    by_name = {}
    for line in (live or "").splitlines(keepends=True):
        if "=" in line:
            by_name[line.split("=", 1)[0]] = line if line.endswith("\n") else line + "\n"
    out = []
    for index, line in enumerate(kept.splitlines(keepends=True)):
        name = masked.get(str(index), False)
        if name is False:
            out.append(line)
        elif name in by_name:
            out.append(by_name[name])
    return "".join(out)


class Releases:
    """The kept releases of a host's services under ``root``."""

    def __init__(self, root, keep=3):
        self.root = root
        self.keep = keep

    def _service(self, service):
        return os.path.join(self.root, service)

    def current(self, service):
        """``{release, at, by, seconds}`` of the release whose files the service has (``seconds``: when
        they were written); None when none is recorded."""
        return _load(os.path.join(self._service(service), CURRENT))

    def kept(self, service):
        """The service's kept releases, oldest first: ``[{release, at, by, files}]``."""
        folder = self._service(service)
        out = []
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            if not os.path.isdir(os.path.join(folder, name)):
                continue
            manifest = _load(os.path.join(folder, name, MANIFEST))
            if manifest:
                out.append(manifest)
        return sorted(out, key=lambda m: m.get("seconds", 0))

    def keep_files(self, service, release, items, secrets, seconds=None):
        """Copy ``items`` (the service's planned files: path, secret) as they are on the host now into
        the release's folder and make it the service's current release."""
        seconds = time.time() if seconds is None else seconds
        folder = os.path.join(self._service(service), release["id"])
        if os.path.isdir(folder):
            shutil.rmtree(folder)
        _folder(self.root)
        _folder(self._service(service))
        _folder(folder)
        files = []
        for number, item in enumerate(items):
            data = _read(item["path"])
            if data is None:
                continue
            st = os.stat(item["path"])
            entry = {
                "path": item["path"],
                "mode": "%04o" % (st.st_mode & 0o7777),
                "gid": st.st_gid,
                "mtime": st.st_mtime,
            }
            text = data.decode("utf-8", "replace")
            if item.get("secret"):
                text, masked = mask(text, secrets)
                if None in masked.values():
                    entry["live"] = True
                    files.append(entry)
                    continue
                entry["masked"] = masked
            entry["copy"] = "f%d" % number
            write_file(os.path.join(folder, entry["copy"]), text, "0600")
            files.append(entry)
        mark = {"release": release["id"], "at": _stamp(seconds), "seconds": seconds, "by": release.get("by") or ""}
        _dump(os.path.join(folder, MANIFEST), dict(mark, files=files))
        _dump(os.path.join(self._service(service), CURRENT), mark)
        self.prune(service)

    def adopt(self, service, items, secrets):
        """Keep the files a service had before the collection kept releases, once, as ``unrecorded``."""
        present = [item for item in items if os.path.exists(item["path"])]
        if self.current(service) or not present:
            return False
        seconds = min(os.stat(item["path"]).st_mtime for item in present)
        self.keep_files(service, {"id": UNRECORDED, "by": "found on the host"}, present, secrets, seconds)
        return True

    def written(self, service):
        """When the collection last wrote the files of the service's current release (seconds: kept,
        or restored); None when none is recorded. A hand edit since does not count: that is drift."""
        return (self.current(service) or {}).get("seconds")

    def forget(self, service, release):
        """Drop one kept release of ``service``."""
        shutil.rmtree(os.path.join(self._service(service), release), ignore_errors=True)

    def prune(self, service):
        """Drop kept releases past ``keep``, those a rollback left first, then the oldest; never the current one."""
        current = (self.current(service) or {}).get("release")
        kept = self.kept(service)
        order = [m for m in kept if m.get("undone")] + [m for m in kept if not m.get("undone")]
        extra = len(kept) - self.keep
        for manifest in order:
            if extra <= 0:
                break
            if manifest["release"] != current:
                self.forget(service, manifest["release"])
                extra -= 1

    def target(self, service, wanted=None):
        """The release a rollback gives ``service``: ``wanted`` when kept; else, of the releases no rollback
        left (a failed canary's, an undone staging's), the one before the newest. None when there is none."""
        kept = self.kept(service)
        if wanted:
            return next((m for m in kept if m["release"] == wanted), None)
        live = [m for m in kept if not m.get("undone")]
        return live[-2] if len(live) > 1 else None

    def restore_plan(self, service, manifest):
        """``[(entry, text)]``: the files of ``manifest`` that differ from the host's, with their text."""
        folder = os.path.join(self._service(service), manifest["release"])
        out = []
        for entry in manifest.get("files") or []:
            if entry.get("live"):
                continue
            kept = (_read(os.path.join(folder, entry["copy"])) or b"").decode("utf-8")
            live = _read(entry["path"])
            text = kept
            if "masked" in entry:
                text = unmask(kept, entry["masked"], None if live is None else live.decode("utf-8", "replace"))
            if file_changes(entry["path"], text, entry["mode"], entry["gid"]):
                out.append((entry, text))
        return out

    def restore(self, service, manifest, check, still_runs=False):
        """Write ``manifest``'s files where they differ and make it current. The paths written.

        ``still_runs``: the service's process predates its current files, so it still runs the release
        restored: the files get back the times they had then, and it owes no restart."""
        writes = self.restore_plan(service, manifest)
        left = (self.current(service) or {}).get("release")
        if not check and left and left != manifest["release"]:
            # The release left is undone: a later rollback does not count it (see target).
            path = os.path.join(self._service(service), left, MANIFEST)
            data = _load(path)
            if data:
                _dump(path, dict(data, undone=True))
        if not check:
            for entry, text in writes:
                write_file(entry["path"], text, entry["mode"], known_gid(entry["gid"]))
                if still_runs and entry.get("mtime"):
                    os.utime(entry["path"], (entry["mtime"], entry["mtime"]))
            # seconds: when the files were written (a unit started before runs an earlier release).
            mark = {k: manifest[k] for k in ("release", "at", "by") if k in manifest}
            # A process that still runs the release restored owes nothing: its files' time is that release's.
            mark["seconds"] = manifest.get("seconds", 0) if still_runs else time.time()
            _dump(os.path.join(self._service(service), CURRENT), mark)
        return [entry["path"] for entry, _text in writes]


def known_gid(gid):
    """``gid`` when the group still exists on the host, else 0 (root)."""
    try:
        grp.getgrgid(gid)
    except KeyError:
        return 0
    return gid


def newest_change(items, service):
    """The newest modification time (seconds) of ``service``'s files among ``items`` whose change
    restarts it; None when it has none on the host."""
    times = []
    for item in items:
        if item["service"] != service or item.get("change", "restart") != "restart":
            continue
        try:
            times.append(os.stat(item["path"]).st_mtime)
        except FileNotFoundError:
            pass
    return max(times) if times else None


class Keeper:
    """The releases the service_units module keeps, from its parameters (nothing without ``release``)."""

    def __init__(self, params, check):
        self.release = params["release"]
        self.check = check
        self.files = params["files"]
        self.secrets = params["secrets"]
        self.store = Releases(params["releases_dir"], params["releases_keep"])

    def _items(self, service):
        return [f for f in self.files if f["service"] == service]

    def adopt(self):
        """Keep, once, what each service without a release had before it is overwritten (``unrecorded``)."""
        self.unrecorded = []
        if not self.release:
            return
        self.unrecorded = [s for s in dict.fromkeys(f["service"] for f in self.files) if not self.store.current(s)]
        if not self.check:
            for service in self.unrecorded:
                self.store.adopt(service, self._items(service), self.secrets)

    def keep(self, changed):
        """Keep the files of the changed services (and of those that had no release) as this release;
        the services kept, sorted. What was adopted of a service whose files did not change is dropped."""
        if not self.release:
            return []
        services = sorted(set(changed) | set(self.unrecorded))
        if not self.check:
            for service in services:
                if service not in changed:
                    self.store.forget(service, UNRECORDED)
                self.store.keep_files(service, self.release, self._items(service), self.secrets)
        return services


def owed_restarts(params, systemd, changed_services):
    """The services of the module's ``pending`` whose process started before the collection last wrote
    their files (their release's time, else the files' newest change), sorted; ``systemd``:
    module_utils.unit_starts.Systemd."""
    asked = params["pending"]
    if not asked:
        return []
    started = systemd.started([p["unit"] for p in asked])
    store = Releases(params["releases_dir"])
    out = set()
    for item in asked:
        newest = store.written(item["name"]) or newest_change(params["files"], item["name"])
        since = started.get(item["unit"])
        if item["name"] in changed_services or (since is not None and newest is not None and since < newest):
            out.add(item["name"])
    return sorted(out)
