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
    for name, data in sorted(p["documents"].items()):
        entries.append(("%s.json" % name, scrub.text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")))
    if missing:
        entries.append(("missing.txt", "\n".join(missing) + "\n"))
    members = ["%s/%s" % (p["host"], name) for name, _text in entries]
    if module.check_mode:
        module.exit_json(changed=False, members=members, redacted=scrub.count)
    tmp = p["dest"] + ".part"
    now = time.time()
    old = os.umask(0o077)
    try:
        with tarfile.open(tmp, "w:gz") as tar:
            for index, (_name, text) in enumerate(entries):
                member = members[index]
                data = text.encode("utf-8")
                info = tarfile.TarInfo(member)
                info.size = len(data)
                info.mtime = now
                info.mode = 0o600
                tar.addfile(info, io.BytesIO(data))
        os.replace(tmp, p["dest"])
    finally:
        os.umask(old)
        if os.path.exists(tmp):
            os.unlink(tmp)
    module.exit_json(changed=True, dest=p["dest"], members=members, redacted=scrub.count)


if __name__ == "__main__":
    main()
