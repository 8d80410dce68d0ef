# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""A manifest of a model checkpoint folder (file sizes and checksums), so that nodes can be compared.

Used by the model_manifest module and by preflight_host (which describes the checkpoint in the
same round trip as its checks, for the prerequisites stage of the same run).
"""

from __future__ import annotations

import hashlib
import os

MIB = 1024 * 1024


def file_checksum(path, size, mode, small):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        if mode == "full" or size <= small:
            for block in iter(lambda: handle.read(4 * MIB), b""):
                digest.update(block)
        else:
            digest.update(handle.read(MIB))
            handle.seek(max(size - MIB, 0))
            digest.update(handle.read(MIB))
            digest.update(str(size).encode())
    return digest.hexdigest()


def manifest(path, mode, small):
    if not os.path.isdir(path):
        return {"path": path, "exists": False, "digest": None, "files": 0, "bytes": 0, "entries": {}}
    entries = {}
    total = 0
    for root, dirs, names in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            if name.startswith("."):
                continue  # stamps, locks and hidden download caches are not part of the revision
            full = os.path.join(root, name)
            rel = os.path.relpath(full, path)
            size = os.path.getsize(full)
            total += size
            entries[rel] = {"size": size, "sha256": file_checksum(full, size, mode, small)}
    overall = hashlib.sha256()
    for rel in sorted(entries):
        overall.update(("%s\0%d\0%s\n" % (rel, entries[rel]["size"], entries[rel]["sha256"])).encode())
    return {
        "path": path,
        "exists": True,
        "digest": overall.hexdigest(),
        "files": len(entries),
        "bytes": total,
        "entries": entries,
    }
