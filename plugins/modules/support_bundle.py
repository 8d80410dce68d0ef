#!/usr/bin/python
# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Write one host's part of a support bundle: files, journals, HTTP snapshots and reports, secrets redacted."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: support_bundle
short_description: Write one host's part of a support bundle, with every secret redacted
version_added: 0.3.0
description:
  - Writes a C(.tar.gz) on the host holding the given files (units, environment and configuration
    files), the tail of each unit's journal, a snapshot of each given URL (health, C(/metrics)) and
    the given reports (as JSON), under a folder named after the host.
  - Secrets never reach the archive. In environment files the value of every variable named in
    O(secret_names), or whose name says it is a key, token, password or secret, is replaced by
    C(<redacted>). Secret files are replaced by a line saying how long they were. Every occurrence of
    each of O(secrets) (the API keys) in anything written is replaced by C(<redacted>).
  - A file that does not exist is noted in C(missing.txt), not an error.
  - With O(hardware), the kernel log's lines that match its patterns go into C(kernel.log) (from
    C(dmesg), or the kernel's journal where C(dmesg) is not readable), and each of its commands
    that the host has runs (60 s at most) into C(commands/<name>.txt). A command the host does not
    have is noted in C(missing.txt).
options:
  host:
    description: The inventory host (the archive's top folder).
    type: str
    required: true
  dest:
    description: The archive to write on the host (replaced when it exists).
    type: path
    required: true
  files:
    description: Files to include, each with its kind.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Absolute path on the host.
        type: path
        required: true
      kind:
        description: C(env) (values of secret variables redacted), C(secret) (content withheld) or C(plain).
        type: str
        choices: [env, secret, plain]
        default: plain
  units:
    description: Units whose journal tail is included.
    type: list
    elements: str
    default: []
  journal_lines:
    description: Lines of each unit's journal (the newest).
    type: int
    default: 2000
  urls:
    description: HTTP snapshots to include (C(GET), the status line and up to O(max_bytes) of the body).
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The snapshot's file name (under C(http/)).
        type: str
        required: true
      url:
        description: The URL.
        type: str
        required: true
  max_bytes:
    description: Most bytes kept of each journal and HTTP body.
    type: int
    default: 4194304
  api_key:
    description: Bearer key sent with each HTTP snapshot. Never logged, never written.
    type: str
    default: ""
  ca_path:
    description: CA file for https URLs; empty uses the system's CAs.
    type: str
    default: ""
  secrets:
    description: Strings that must not appear in the archive (the deployment's API keys). Never logged.
    type: list
    elements: str
    default: []
  secret_names:
    description: Environment variables whose values are secret (the plan's C(secret_env) names).
    type: list
    elements: str
    default: []
  documents:
    description: Reports to include as C(<name>.json) (status, preflight, accelerator facts).
    type: dict
    default: {}
  hardware:
    description:
      - The hardware findings to take (the P(kimi_k3.serving.bundle_hardware#filter) filter gives them).
    type: dict
    default: {}
    suboptions:
      commands:
        description: Tools to run where the host has them, each as C(name) and C(argv).
        type: list
        elements: dict
        default: []
      kernel_patterns:
        description: Regular expressions; the kernel log's lines matching any of them are kept.
        type: list
        elements: str
        default: []
      tool_dirs:
        description: Folders searched for the tools besides C(PATH).
        type: list
        elements: path
        default: []
attributes:
  check_mode:
    support: full
    description: In check mode nothing is written.
  diff_mode:
    support: none
    description: Every run writes a new archive; no diff is shown.
  idempotent:
    support: none
    description: Every run writes a new archive (journals and metrics move on).
author:
  - kimi_k3.serving maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: This host's part of the bundle
  kimi_k3.serving.support_bundle:
    host: "{{ inventory_hostname }}"
    dest: /tmp/k3-support.tar.gz
    files:
      - {path: /etc/systemd/system/k3-decode.service}
      - {path: /etc/kimi-k3/decode.env, kind: env}
    units: [k3-decode]
    urls:
      - {name: decode-metrics.txt, url: "http://10.0.0.12:8200/metrics"}
    secrets: "{{ k3_api_key }}"
"""

RETURN = r"""
dest:
  description: The archive written on the host.
  returned: success
  type: str
members:
  description: The archive's file names.
  returned: always
  type: list
  elements: str
redacted:
  description: How many values or occurrences were redacted.
  returned: always
  type: int
"""

import io
import json
import os
import re
import tarfile
import time
import urllib.error

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url

SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.IGNORECASE)
REDACTED = "<redacted>"


class Scrubber:
    """Replaces the secrets in text, counting what it replaced."""

    def __init__(self, secrets, secret_names):
        self.secrets = sorted({s for s in secrets if s}, key=len, reverse=True)
        self.names = set(secret_names)
        self.count = 0

    def text(self, value):
        for secret in self.secrets:
            if secret in value:
                self.count += value.count(secret)
                value = value.replace(secret, REDACTED)
        return value

    def env(self, value):
        out = []
        for line in value.splitlines():
            key, sep, _rest = line.partition("=")
            name = key.strip()
            if sep and not name.startswith("#") and (name in self.names or SECRET_NAME.search(name)):
                out.append("%s=%s" % (key, REDACTED))
                self.count += 1
            else:
                out.append(line)
        return self.text("\n".join(out) + ("\n" if value.endswith("\n") else ""))


def snapshot(url, api_key, ca_path, max_bytes):
    headers = {"Authorization": "Bearer " + api_key} if api_key else {}
    try:
        # The host's own services: no proxy; https checked against the deployment's CA when given.
        with open_url(url, headers=headers, timeout=10, ca_path=ca_path or None, use_proxy=False) as resp:
            return "HTTP %d\n%s" % (resp.status, resp.read(max_bytes).decode("utf-8", "replace"))
    except urllib.error.HTTPError as exc:
        return "HTTP %d\n%s" % (exc.code, exc.read(max_bytes).decode("utf-8", "replace"))
    except (OSError, ValueError) as exc:
        return "no answer: %s\n" % exc


def kernel_findings(module, patterns, max_bytes):
    """The kernel log's lines matching ``patterns``, with where they came from and how many matched."""
    if not patterns:
        return None
    wanted = re.compile("|".join("(?:%s)" % p for p in patterns))
    tried = []
    for argv in (["dmesg", "--time-format", "iso"], ["journalctl", "-k", "--no-pager", "--output=short-iso"]):
        rc, out, err = module.run_command(argv, check_rc=False)
        if rc == 0:
            lines = out.splitlines()
            kept = [line for line in lines if wanted.search(line)]
            head = "# %s: %d of %d lines match the hardware patterns\n" % (" ".join(argv), len(kept), len(lines))
            return (head + "\n".join(kept) + ("\n" if kept else ""))[-max_bytes:]
        tried.append("%s: exit %d: %s" % (" ".join(argv), rc, (err or out).strip()[:200]))
    return "# the kernel log is not readable here\n" + "\n".join(tried) + "\n"


def run_tools(module, commands, tool_dirs, max_bytes):
    """``[(name, text)]`` of each command the host has, and ``[note]`` of those it has not."""
    found, absent = [], []
    for command in commands:
        argv = [str(a) for a in command.get("argv") or []]
        if not argv:
            continue
        program = module.get_bin_path(argv[0], opt_dirs=tool_dirs)
        if not program:
            absent.append("command %s: %s is not on this host" % (command["name"], argv[0]))
            continue
        # At most 60 s each (coreutils' timeout): a tool stuck on a device does not hold the bundle.
        rc, out, err = module.run_command(["timeout", "60", program] + argv[1:], check_rc=False)
        if rc == 124:
            text = "$ %s\n# did not finish within 60 s\n%s%s" % (" ".join(argv), out, err)
        else:
            text = "$ %s\n# exit %d\n%s%s" % (" ".join(argv), rc, out, err)
        found.append((command["name"], text[-max_bytes:]))
    return found, absent


def write_archive(dest, pairs):
    """The archive at ``dest`` of ``[(member, text)]`` (written beside it, then moved in place), each 0600."""
    tmp = dest + ".part"
    now = time.time()
    old = os.umask(0o077)
    try:
        with tarfile.open(tmp, "w:gz") as tar:
            for member, text in pairs:
                data = text.encode("utf-8")
                info = tarfile.TarInfo(member)
                info.size = len(data)
                info.mtime = now
                info.mode = 0o600
                tar.addfile(info, io.BytesIO(data))
        os.replace(tmp, dest)
    finally:
        os.umask(old)
        if os.path.exists(tmp):
            os.unlink(tmp)


def main():
    module = AnsibleModule(
        argument_spec={
            "host": {"type": "str", "required": True},
            "dest": {"type": "path", "required": True},
            "files": {
                "type": "list",
                "elements": "dict",
                "default": [],
                "options": {
                    "path": {"type": "path", "required": True},
                    "kind": {"type": "str", "choices": ["env", "secret", "plain"], "default": "plain"},
                },
            },
            "units": {"type": "list", "elements": "str", "default": []},
            "journal_lines": {"type": "int", "default": 2000},
            "urls": {
                "type": "list",
                "elements": "dict",
                "default": [],
                "options": {"name": {"type": "str", "required": True}, "url": {"type": "str", "required": True}},
            },
            "max_bytes": {"type": "int", "default": 4194304},
            "api_key": {"type": "str", "default": "", "no_log": True},
            "ca_path": {"type": "str", "default": ""},
            "secrets": {"type": "list", "elements": "str", "default": [], "no_log": True},
            "secret_names": {"type": "list", "elements": "str", "default": [], "no_log": False},
            "documents": {"type": "dict", "default": {}},
            "hardware": {
                "type": "dict",
                "default": {},
                "options": {
                    "commands": {"type": "list", "elements": "dict", "default": []},
                    "kernel_patterns": {"type": "list", "elements": "str", "default": []},
                    "tool_dirs": {"type": "list", "elements": "path", "default": []},
                },
            },
        },
        supports_check_mode=True,
    )
    p = module.params
    scrub = Scrubber(p["secrets"] + ([p["api_key"]] if p["api_key"] else []), p["secret_names"])
    entries = []  # (name, text)
    missing = []
    for item in p["files"]:
        path = item["path"]
        try:
            with open(path, "rb") as handle:
                raw = handle.read()
        except OSError as exc:
            missing.append("%s: %s" % (path, exc.strerror))
            continue
        if item["kind"] == "secret":
            text = "<withheld: a secret file of %d bytes>\n" % len(raw)
            scrub.count += 1
        elif item["kind"] == "env":
            text = scrub.env(raw.decode("utf-8", "replace"))
        else:
            text = scrub.text(raw.decode("utf-8", "replace"))
        entries.append(("files" + path, text))
    for unit in p["units"]:
        _rc, out, err = module.run_command(
            ["journalctl", "--no-pager", "--output=short-iso", "-n", str(p["journal_lines"]), "-u", unit],
            check_rc=False,
        )
        entries.append(("journal/%s.log" % unit, scrub.text((out or err)[-p["max_bytes"] :])))
    for item in p["urls"]:
        entries.append(
            ("http/" + item["name"], scrub.text(snapshot(item["url"], p["api_key"], p["ca_path"], p["max_bytes"])))
        )
    hardware = p["hardware"] or {}
    kernel = kernel_findings(module, hardware.get("kernel_patterns") or [], p["max_bytes"])
    if kernel is not None:
        entries.append(("kernel.log", scrub.text(kernel)))
    tools, absent = run_tools(module, hardware.get("commands") or [], hardware.get("tool_dirs") or [], p["max_bytes"])
    entries.extend(("commands/%s.txt" % name, scrub.text(text)) for name, text in tools)
    missing.extend(absent)
    for name, data in sorted(p["documents"].items()):
        entries.append(("%s.json" % name, scrub.text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")))
    if missing:
        entries.append(("missing.txt", "\n".join(missing) + "\n"))
    members = ["%s/%s" % (p["host"], name) for name, _text in entries]
    if module.check_mode:
        module.exit_json(changed=False, members=members, redacted=scrub.count)
    write_archive(p["dest"], [(members[i], text) for i, (_name, text) in enumerate(entries)])
    module.exit_json(changed=True, dest=p["dest"], members=members, redacted=scrub.count)


if __name__ == "__main__":
    main()
