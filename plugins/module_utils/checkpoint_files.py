# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""A checkpoint folder checked file by file against its publisher's hashes, and its stamp.

The publisher's list is what the hub gives for the pinned revision: per file its path, its size
and either the SHA-256 of its content (Git LFS files: the weights) or its Git blob id (the small
files kept in Git itself: a SHA-1 over "blob <size>\\0" and the content). A folder that matches
gets a stamp (``.k3-source.json``: the source and the list) so that a re-run knows it without
reading a terabyte again; the stamp is hidden, so the manifests the nodes compare leave it out.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from concurrent.futures import ThreadPoolExecutor

STAMP = ".k3-source.json"
BLOCK = 8 * 1024 * 1024


def file_hash(path, entry):
    """The hash of the file at ``path`` in the kind the publisher gives for ``entry``."""
    if entry.get("sha256"):
        digest = hashlib.sha256()
    else:
        digest = hashlib.sha1()  # noqa: S324 - Git's blob id, the publisher's own hash of the file
        digest.update(b"blob %d\0" % os.path.getsize(path))
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def problem(folder, entry):
    """Why the file of ``entry`` under ``folder`` is not the publisher's, or None when it is."""
    path = os.path.join(folder, entry["path"])
    if not os.path.isfile(path):
        return "%s: missing" % entry["path"]
    size = os.path.getsize(path)
    if size != entry["size"]:
        return "%s: %d bytes, the publisher's has %d" % (entry["path"], size, entry["size"])
    want = entry.get("sha256") or entry["blob_id"]
    got = file_hash(path, entry)
    if got != want:
        kind = "SHA-256" if entry.get("sha256") else "Git blob id"
        return "%s: %s %s, the publisher's is %s" % (entry["path"], kind, got, want)
    return None


def problems(folder, files, workers=8):
    """Every file of ``files`` that ``folder`` does not hold as published (a list of messages).

    Files are hashed side by side (hashlib lets other threads run while it hashes): one core
    hashes SHA-256 at one to two GB/s, and a checkpoint is terabytes of shards.
    """
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        found = pool.map(lambda entry: problem(folder, entry), files)
        return [message for message in found if message]


_HEX = {"sha256": 64, "blob_id": 40}


def _entry_problem(entry):
    if not isinstance(entry, dict):
        return "%r: not a mapping of path, size and sha256" % (entry,)
    path = entry.get("path")
    parts = str(path or "").split("/")
    if not path or path.startswith("/") or any(part in ("", ".", "..") for part in parts) or parts[0] == STAMP:
        return "%r: give a relative path inside the checkpoint (no '..')" % (path,)
    if not isinstance(entry.get("size"), int) or isinstance(entry.get("size"), bool) or entry["size"] < 0:
        return "%s: size %r is not a number of bytes" % (path, entry.get("size"))
    kind = "sha256" if entry.get("sha256") else "blob_id"
    digest = str(entry.get(kind) or "")
    if len(digest) != _HEX[kind] or any(char not in "0123456789abcdef" for char in digest):
        return "%s: give its sha256 (64 lowercase hexadecimal digits)" % path
    return None


def published_list(given, name):
    """The publisher's list given as data, as the hubs give it: ``[{path, size, sha256 | blob_id}]``.

    ``given`` is that list, or a release's checkpoints.json (a list of checkpoints, each with its
    name and files), whose checkpoint ``name`` is taken. Raises ValueError naming what is wrong."""
    if isinstance(given, list) and given and all(isinstance(c, dict) and "files" in c for c in given):
        chosen = [c["files"] for c in given if c.get("name") == name]
        if not chosen:
            raise ValueError("it lists no checkpoint named %s" % name)
        given = chosen[0]
    if not isinstance(given, list) or not given:
        raise ValueError("give a list of files, each with path, size and sha256")
    found = [message for message in map(_entry_problem, given) if message]
    if found:
        raise ValueError("; ".join(found))
    keys = ("path", "size", "sha256", "blob_id")
    return sorted(({k: e[k] for k in keys if e.get(k) is not None} for e in given), key=lambda e: e["path"])


def discard(folder, found):
    """Remove from ``folder`` each file ``found`` (problems' messages) names: the next run brings it again."""
    for message in found:
        bad = os.path.join(folder, message.split(": ")[0])
        if os.path.isfile(bad):
            os.unlink(bad)


def stamp_content(source, files):
    return json.dumps({"source": source, "files": files}, indent=1, sort_keys=True) + "\n"


def staging_folder(dest):
    """The folder a checkpoint is fetched into before it becomes ``dest``: ``.<name>.k3-partial`` beside it."""
    parent, name = os.path.split(dest.rstrip("/"))
    return os.path.join(parent, ".%s.k3-partial" % name)


def read_stamp(folder):
    try:
        with open(os.path.join(folder, STAMP), encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def stamped(folder, source, files=None):
    """Whether ``folder`` carries the stamp of ``source`` (and of ``files`` when given) and still
    holds every stamped file at its stamped size: the quick check of a re-run."""
    found = read_stamp(folder)
    if not found or found.get("source") != source or (files is not None and found.get("files") != files):
        return False
    return all(
        os.path.isfile(os.path.join(folder, entry["path"]))
        and os.path.getsize(os.path.join(folder, entry["path"])) == entry["size"]
        for entry in found.get("files", [])
    )


def write_stamp(folder, source, files):
    path = os.path.join(folder, STAMP)
    with open(path + ".tmp", "w", encoding="utf-8") as handle:
        handle.write(stamp_content(source, files))
    os.replace(path + ".tmp", path)


def put_in_place(staging, dest):
    """Move the verified ``staging`` folder to ``dest``; a folder already there (another revision,
    or a copy that did not verify) is moved aside first and removed once the new one is in place."""
    aside = None
    if os.path.lexists(dest):
        aside = dest.rstrip("/") + ".k3-replaced"
        if os.path.lexists(aside):
            shutil.rmtree(aside)
        os.rename(dest, aside)
    os.rename(staging, dest)
    if aside:
        shutil.rmtree(aside)


def free_bytes(folder):
    """Free space on the filesystem that holds ``folder`` (its nearest existing parent)."""
    probe = folder
    while not os.path.exists(probe):
        probe = os.path.dirname(probe) or "/"
    stats = os.statvfs(probe)
    return stats.f_bavail * stats.f_frsize


def present_bytes(folder, files):
    """Bytes of ``files`` already in ``folder`` at their full size (a resumed transfer skips them)."""
    total = 0
    for entry in files:
        path = os.path.join(folder, entry["path"])
        if os.path.isfile(path) and os.path.getsize(path) == entry["size"]:
            total += entry["size"]
    return total
