# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""A host's planned files, applied: each compared with what is on the host (content, mode, owner root,
group), written only where it differs, atomically, after an optional check of its new content.

Used by the service_units module (which writes them) and the service_status module (which only compares
them). Its folders are made as ``mkdir -p`` does.
"""

from __future__ import annotations

import grp
import os
import re
import shlex
import shutil
import tempfile

SECRET_SHOWN = "(secret file: its content is not shown)\n"
# The argument spec of one planned file (a module's list of them).
FILE_OPTIONS = {
    "path": {"type": "path", "required": True},
    "content": {"type": "str"},
    "source": {"type": "path"},
    "line": {"type": "str"},
    "regexp": {"type": "str"},
    "mode": {"type": "str", "default": "0644"},
    "group": {"type": "str", "default": "root"},
    "service": {"type": "str", "required": True},
    "change": {"type": "str", "choices": ["restart", "reload", "none"], "default": "restart"},
    "secret": {"type": "bool", "default": False},
    "validate": {"type": "str"},
}
# The two options of a module that takes a host's planned files (doc fragment kimi_k3.serving.planned_files):
# the files, and the key values they hold, masked in the module's output.
PLANNED_FILES_ARGS = {
    "files": {"type": "list", "elements": "dict", "default": [], "options": FILE_OPTIONS},
    "secrets": {"type": "list", "elements": "str", "default": [], "no_log": True},
}


def _mode(text):
    return int(str(text), 8)


def _read(path):
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def group_id(name):
    """The gid of group ``name``; None when it does not exist (yet)."""
    if name in (None, "", "root"):
        return 0
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        return None


def with_line(current, line, regexp):
    """``current`` (text, or None for no file) with ``line`` in place of the last line matching ``regexp``,
    else appended."""
    lines = (current or "").splitlines()
    pattern = re.compile(regexp) if regexp else None
    found = [i for i, text in enumerate(lines) if (pattern.search(text) if pattern else text == line)]
    if found:
        lines[found[-1]] = line
    else:
        lines.append(line)
    return "\n".join(lines) + "\n"


def resolve_content(item):
    """The item's planned content: given, read from its ``source``, or its file with its ``line``."""
    given = [key for key in ("content", "source", "line") if item.get(key) is not None]
    if len(given) != 1:
        raise ValueError("%s: give exactly one of content, source and line (got %s)" % (item["path"], given or "none"))
    if item.get("source") is not None:
        data = _read(item["source"])
        if data is None:
            raise ValueError("%s: its source %s does not exist" % (item["path"], item["source"]))
        return data.decode("utf-8")
    if item.get("line") is not None:
        current = _read(item["path"])
        return with_line(None if current is None else current.decode("utf-8"), item["line"], item.get("regexp"))
    return item["content"]


def file_changes(path, content, mode, gid=0):
    """What differs between the host's ``path`` and the planned file: a list of reasons.
    ``gid`` None: the group does not exist yet (an owner change)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return ["created"]
    reasons = []
    if _read(path) != content.encode("utf-8"):
        reasons.append("content")
    if (st.st_mode & 0o7777) != _mode(mode):
        reasons.append("mode")
    if st.st_uid != 0 or st.st_gid != gid:
        reasons.append("owner")
    return reasons


def write_file(path, content, mode, gid=0):
    """Write ``content`` to ``path`` atomically, owned by root (group ``gid``) with ``mode`` from the start."""
    folder = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".k3-")
    try:
        os.fchmod(fd, _mode(mode))
        os.fchown(fd, 0, gid)
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
    """Write what differs, in order; returns (changed file entries, diffs). ``validate(item)`` checks the
    new content of an item with a ``validate`` command before it is written (also in check mode).
    An item's content is resolved on the host (``resolve_content``) just before it is compared."""
    changed, diffs = [], []
    for given in items:
        item = dict(given, content=resolve_content(given))
        gid = group_id(item.get("group"))
        if gid is None and not check:
            raise OSError("%s: its group %s does not exist" % (item["path"], item["group"]))
        reasons = file_changes(item["path"], item["content"], item["mode"], gid)
        if not reasons:
            continue
        if want_diff:
            diffs.append(file_diff(item, reasons))
        if validate and item.get("validate") and {"content", "created"} & set(reasons):
            validate(item)
        if not check:
            if not os.path.isdir(os.path.dirname(item["path"])):
                raise OSError("%s: its folder does not exist" % item["path"])
            write_file(item["path"], item["content"], item["mode"], gid)
        changed.append(
            {"path": item["path"], "service": item["service"], "changes": reasons, "change": item.get("change")}
        )
    return changed, diffs


def validator(module):
    """``validate(item)``: run the item's validate command on its new content in a temporary file."""

    def validate(item):
        program = shlex.split(item["validate"])[0]
        if not shutil.which(program):
            if module.check_mode:
                # Its package is installed by this same run, which check mode does not do.
                return
            module.fail_json(msg="%s: its check %s is not installed on this host" % (item["path"], program))
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
