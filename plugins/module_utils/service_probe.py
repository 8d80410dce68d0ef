# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Reading a planned service on its host: its systemd unit, its journal, its health URL, its process.

Shared by the modules that wait for services (service_health) and report on them (service_status).
``run`` is a module's ``run_command``.
"""

from __future__ import annotations

import glob
import http.client
import os
import ssl
from urllib.parse import urlsplit

UNIT_PROPERTIES = (
    "ActiveState",
    "SubState",
    "NRestarts",
    "Result",
    "MainPID",
    "NeedDaemonReload",
    "ExecMainStatus",
    "ExecMainStartTimestamp",
)


def unit_properties(run, unit, names=UNIT_PROPERTIES):
    """``systemctl show`` properties of ``unit`` as a dict (empty when systemctl fails); timestamps
    with microseconds, in UTC (unit_starts.stamp_seconds reads them)."""
    rc, out, _err = run(
        ["systemctl", "show", unit, "--timestamp=us+utc", "--property=" + ",".join(names)], check_rc=False
    )
    props = {}
    if rc == 0:
        for line in out.splitlines():
            key, _sep, value = line.partition("=")
            props[key] = value
    return props


def journal_tail(run, unit, lines):
    """The last ``lines`` lines of the unit's journal."""
    _rc, out, err = run(
        ["journalctl", "--no-pager", "--output=short-iso", "-n", str(lines), "-u", unit], check_rc=False
    )
    return (out or err).rstrip()


def http_status(url, api_key="", ca_path="", timeout=5):
    """The HTTP status a GET of ``url`` answers, or None when nothing answers.

    A keep-alive HTTP/1.1 request: the memcache MetaService does not send the body of its /health
    answer to clients that ask to close the connection.
    """
    parts = urlsplit(url)
    if parts.scheme == "https":
        context = ssl.create_default_context(cafile=ca_path or None)
        conn = http.client.HTTPSConnection(parts.hostname, parts.port, timeout=timeout, context=context)
    else:
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    headers = {"Authorization": "Bearer " + api_key} if api_key else {}
    try:
        conn.request("GET", (parts.path or "/") + ("?" + parts.query if parts.query else ""), headers=headers)
        resp = conn.getresponse()
        resp.read()
        return resp.status
    except (OSError, http.client.HTTPException):
        return None
    finally:
        conn.close()


def process_argv(pid, proc="/proc"):
    """The argv of process ``pid`` (empty when it is gone or unreadable)."""
    try:
        with open(os.path.join(proc, str(pid), "cmdline"), "rb") as handle:
            raw = handle.read()
    except OSError:
        return []
    return [part.decode("utf-8", "replace") for part in raw.split(b"\0")[:-1]] if raw else []


def argv_runs(running, planned, runtime="host"):
    """Whether the running argv is the planned one.

    ``host``: the program is looked up on PATH and may be a script run by its interpreter, so the
    running argv ends with the planned arguments after a program of the same name.
    ``docker``: the unit's process is ``docker run ... IMAGE argv[1:]``: it ends with the planned
    arguments (the image and entry point are compared through the image).
    """
    if not running or not planned:
        return False
    if len(running) == 1 and " " in running[0]:
        # A title the process set itself over its argv (nginx: "nginx: master process ARGV").
        title = running[0]
        running = title.partition("master process ")[2].split() or title.split()
    args = list(planned[1:])
    if runtime != "host":
        return running[len(running) - len(args) :] == args if args else True
    program = os.path.basename(planned[0])
    for i, part in enumerate(running):
        if os.path.basename(part) == program and running[i + 1 :] == args:
            return True
    return False


def distribution_version(bin_dirs, distribution):
    """The version of ``distribution`` installed in the virtualenv of the first of ``bin_dirs`` that has it.

    Read from the ``*.dist-info`` folder name, without importing the package (vLLM takes seconds to
    import). None when none of them has it.
    """
    if not distribution:
        return None
    name = distribution.replace("-", "_")
    for bin_dir in bin_dirs:
        prefix = os.path.dirname(os.path.abspath(bin_dir))
        pattern = os.path.join(prefix, "lib", "python3*", "site-packages", name + "-*.dist-info")
        for folder in sorted(glob.glob(pattern)):
            return os.path.basename(folder)[len(name) + 1 : -len(".dist-info")]
    return None
