# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""An engine's compile caches on the host: kept across restarts, emptied when its image changes.

vLLM, torch.compile (inductor) and Triton key their caches on what compiled them, so the caches of
an older image are never used again by a new one: they only fill the disk. Each cache folder holds
a stamp file with the image it was filled by. When the planned image differs from the stamp, the
folder is emptied (the engine restarts anyway: its unit changed) and the stamp rewritten. A folder
without a stamp (made before the collection kept one) is adopted as it is.
"""

from __future__ import annotations

import os
import shutil
import tempfile

STAMP = ".kimi-k3-cache-key"
# The argument spec of one compile cache (a module's list of them).
CACHE_OPTIONS = {
    "path": {"type": "path", "required": True},
    "key": {"type": "str", "required": True, "no_log": False},
    "service": {"type": "str", "required": True},
}


def _size(path):
    total = 0
    for folder, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                pass
    return total


def _read(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip()
    except FileNotFoundError:
        return None


def _empty(path):
    for name in os.listdir(path):
        if name == STAMP:
            continue
        child = os.path.join(path, name)
        if os.path.isdir(child) and not os.path.islink(child):
            shutil.rmtree(child)
        else:
            os.unlink(child)


def _stamp(path, key):
    os.makedirs(path, mode=0o755, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path, prefix=".stamp-")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(key + "\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, os.path.join(path, STAMP))


def apply_caches(caches, check):
    """``(changed paths, cleared)`` for ``caches`` (each ``{path, key, service}``): ``cleared`` lists
    ``{service, path, was, now, bytes}`` of each folder emptied (in check mode: that would be)."""
    changed, cleared = [], []
    for cache in caches or []:
        path, key = cache["path"], cache["key"]
        was = _read(os.path.join(path, STAMP))
        if was == key:
            continue
        changed.append(path)
        if was is not None and os.path.isdir(path):
            held = [name for name in os.listdir(path) if name != STAMP]
            if held:
                item = {"service": cache.get("service", ""), "path": path, "was": was, "now": key}
                item["bytes"] = _size(path)
                cleared.append(item)
                if not check:
                    _empty(path)
        if not check:
            _stamp(path, key)
    return changed, cleared
