#!/usr/bin/python
# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Check a node's copy of a checkpoint against the publisher's hashes and put it in place."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: model_copy
short_description: Check a node's copy of a checkpoint against the publisher's hashes, then put it in place
version_added: 0.2.0
description:
  - With O(state=check), says whether O(dest) holds the checkpoint of O(source) (its stamp, and
    every file at its size), without reading the files; nothing changes.
  - With O(state=present), checks every file of the copy that came to O(staged) (the fan-out's
    folder) against the publisher's list O(files) (SHA-256 or Git blob id), writes the stamp and
    moves it to O(dest). A file that does not match is named and removed from O(staged) (the next
    run brings it again); nothing is moved.
options:
  name:
    description: The checkpoint's name in messages (model or draft).
    type: str
    required: true
  dest:
    description: The checkpoint folder on the host.
    type: path
    required: true
  staged:
    description: The folder the copy came to; required with O(state=present).
    type: path
  source:
    description: The source the stamp records (hub, repo, revision, endpoint).
    type: dict
    required: true
  files:
    description:
      - The publisher's files (path, size, and sha256 or blob_id), as kimi_k3.serving.model_fetch returns them.
      - Required with O(state=present); with O(state=check) the stamp's own list is checked when it is not given.
    type: list
    elements: dict
  state:
    description: check or present.
    type: str
    choices: [check, present]
    default: present
attributes:
  check_mode:
    support: full
    description: In check mode nothing is read past the stamp and nothing moves; changed says whether a copy would move.
  diff_mode:
    support: none
    description: A checkpoint is terabytes of binary files; the result names the files instead.
  idempotent:
    support: full
    description: A folder that already carries the stamp of the same source and files is left alone.
author:
  - kimi_k3.serving maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Put the copy that came by BitTorrent in place
  kimi_k3.serving.model_copy:
    name: model
    dest: /models/Kimi-K3
    staged: /models/.Kimi-K3.k3-fanout/Kimi-K3
    source: "{{ item.source }}"
    files: "{{ fetched.files }}"
"""

RETURN = r"""
present:
  description: Whether O(dest) holds the checkpoint (after the run).
  returned: always
  type: bool
free_bytes:
  description: Free bytes on the filesystem O(dest) is (or will be) on.
  returned: always
  type: int
problems:
  description: The files of the staged copy that are not the publisher's.
  returned: on a mismatch
  type: list
  elements: str
"""

import os
import shutil

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kimi_k3.serving.plugins.module_utils import checkpoint_files as files_


def main():
    module = AnsibleModule(
        argument_spec={
            "name": {"type": "str", "required": True},
            "dest": {"type": "path", "required": True},
            "staged": {"type": "path"},
            "source": {"type": "dict", "required": True},
            "files": {"type": "list", "elements": "dict"},
            "state": {"type": "str", "choices": ["check", "present"], "default": "present"},
        },
        required_if=[("state", "present", ["staged", "files"])],
        supports_check_mode=True,
    )
    params = module.params
    dest = params["dest"].rstrip("/")
    source = {key: value for key, value in params["source"].items() if value}
    files = params["files"]
    free = files_.free_bytes(dest)
    if files_.stamped(dest, source, files):
        module.exit_json(changed=False, present=True, free_bytes=free)
    if params["state"] == "check" or module.check_mode:
        module.exit_json(changed=params["state"] == "present", present=False, free_bytes=free)
    staged = params["staged"]
    found = files_.problems(staged, files)
    files_.discard(staged, found)  # the next run brings them again; what matched stays
    if found:
        module.fail_json(
            msg="%s (%s): the copy that came is not the publisher's, nothing moved into place: %s"
            % (params["name"], dest, "; ".join(found)),
            problems=found,
            present=False,
            free_bytes=free,
        )
    files_.write_stamp(staged, source, files)
    files_.put_in_place(staged, dest)
    holder = os.path.dirname(staged.rstrip("/"))
    if os.path.basename(holder).endswith(".k3-fanout"):
        shutil.rmtree(holder, ignore_errors=True)  # the transfer's own control files
    module.exit_json(changed=True, present=True, free_bytes=files_.free_bytes(dest))


if __name__ == "__main__":
    main()
