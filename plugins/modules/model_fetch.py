#!/usr/bin/python
# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Fetch a checkpoint from a hub or a file store, verified against the publisher's hashes."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: model_fetch
short_description: Fetch a checkpoint from a hub, verified against the publisher's hashes
version_added: 0.2.0
description:
  - Lists the files of a repository at a pinned revision with their publisher's hashes and
    downloads them with the hub's own client into a staging folder beside O(dest). Hugging Face
    (or a Hub-compatible mirror) gives the Git LFS SHA-256 of every weight file and the Git blob id
    of every small file, and C(huggingface_hub) fetches them; ModelScope (or a mirror of it) gives
    the SHA-256 of every file, and the C(modelscope) SDK fetches them. A plain file store gives no
    hashes, so for an HTTP(S) server (C(aria2c) fetches) or an S3-compatible bucket (C(rclone) fetches)
    the publisher's list comes as data (O(published)). Only when every file
    matches is the staging folder moved to O(dest); a checkpoint is never half there under its
    final name. A corrupted or truncated file is named, removed from staging, and nothing is
    moved.
  - Resumable. A transfer cut half way keeps what it has in staging and the next run goes on from
    there. A folder at O(dest) that already carries the stamp of this source, with every file at
    its size, is left alone (changed=false); C(verify=full) reads every byte of it again.
  - Runs under a Python that has the hub's client (the role sets the interpreter). The proxy
    variables of the environment are honoured by the client; the token is never logged.
options:
  name:
    description: The checkpoint's name in messages (model or draft).
    type: str
    required: true
  dest:
    description: The checkpoint folder on the host.
    type: path
    required: true
  source:
    description: Where it comes from.
    type: dict
    required: true
    suboptions:
      hub:
        description: The kind of hub.
        type: str
        choices: [huggingface, modelscope, url, s3]
        required: true
      repo:
        description: The repository (owner/name); required for C(huggingface) and C(modelscope).
        type: str
      revision:
        description:
          - The revision (Hugging Face, a commit; ModelScope, a tag, a branch or a commit); required for the hubs.
          - For C(url) and C(s3), a label of the copy.
        type: str
      url:
        description:
          - The folder's address on a file store, required for C(url) (C(https://host/path)) and C(s3) (C(s3://bucket/prefix)).
        type: str
      files:
        description: Where the publisher's list came from (the controller's file); recorded in the stamp.
        type: str
      endpoint:
        description:
          - A mirror's address (Hub-compatible, or ModelScope-compatible); the hub itself when empty.
          - For C(s3), the S3 endpoint of a bucket that is not on AWS (MinIO, Ceph RGW, ...).
        type: str
  published:
    description:
      - The publisher's list for a file store (C(url), C(s3)), which gives none of its own.
      - A list of files, each with C(path), C(size) and C(sha256) (or C(blob_id)), or a release's
        C(checkpoints.json), whose checkpoint called O(name) is taken.
    type: raw
  token:
    description:
      - The hub's token (from the vault); never logged. For C(url), sent as a bearer token.
      - For C(s3), a mapping of C(access_key_id), C(secret_access_key) and optionally C(session_token);
        without it the host's own credentials are used (AWS_* variables, an instance role).
    type: raw
  workers:
    description: Files downloaded side by side.
    type: int
    default: 8
  verify:
    description: C(quick) trusts a stamped folder whose files have their sizes; C(full) hashes it again.
    type: str
    choices: [quick, full]
    default: quick
attributes:
  check_mode:
    support: full
    description:
      - In check mode the hub is asked for the revision's files and nothing is fetched or moved.
      - changed says whether a run would fetch.
  diff_mode:
    support: none
    description: A checkpoint is terabytes of binary files; the result gives the files and their hashes instead.
  idempotent:
    support: full
    description: A folder that carries the stamp of the same source and files is left alone.
author:
  - kimi_k3.serving maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: The checkpoint, once, on the seed host
  kimi_k3.serving.model_fetch:
    name: model
    dest: /models/Kimi-K3
    source:
      hub: huggingface
      repo: moonshotai/Kimi-K3
      revision: 0123456789abcdef0123456789abcdef01234567
    token: "{{ k3_model_weights_hf_token | default(omit) }}"

- name: The Ascend checkpoint from ModelScope, at a tag
  kimi_k3.serving.model_fetch:
    name: model
    dest: /root/.cache/Kimi-K3-w4a8
    source:
      hub: modelscope
      repo: Eco-Tech/Kimi-K3-w4a8
      revision: v1.0
    token: "{{ k3_model_weights_modelscope_token | default(omit) }}"

- name: An air-gapped site's copy on its own file server, checked against a release's list
  kimi_k3.serving.model_fetch:
    name: model
    dest: /models/Kimi-K3
    source:
      hub: url
      url: https://files.site.example/Kimi-K3
    published: "{{ lookup('ansible.builtin.file', 'releases/20261207T120000Z/checkpoints.json') | from_json }}"
"""

RETURN = r"""
files:
  description: The publisher's files of the revision.
  returned: success
  type: list
  elements: dict
  contains:
    path:
      description: The file's path in the checkpoint.
      type: str
    size:
      description: Its size in bytes.
      type: int
    sha256:
      description: The SHA-256 of its content (Git LFS files on Hugging Face; every file elsewhere).
      type: str
    blob_id:
      description: Its Git blob id (files kept in Git itself on Hugging Face).
      type: str
bytes:
  description: The checkpoint's size in bytes.
  returned: success
  type: int
fetched_bytes:
  description: Bytes this run brought (0 when the folder was already there).
  returned: success
  type: int
seconds:
  description: How long the download and the verification took.
  returned: success
  type: float
"""

import os
import shutil
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kimi_k3.serving.plugins.module_utils import checkpoint_files as files_
from ansible_collections.kimi_k3.serving.plugins.module_utils.model_hub import STORES, HubError, download, hub_files

# What each kind of source needs besides its hub.
NEEDS = {"huggingface": ("repo", "revision"), "modelscope": ("repo", "revision"), "url": ("url",), "s3": ("url",)}


def _fetch(module, staging, files):
    params = module.params
    needed = sum(entry["size"] for entry in files) - files_.present_bytes(staging, files)
    free = files_.free_bytes(staging)
    if needed > free:
        module.fail_json(
            msg="%s (%s): %d bytes still to fetch, %d free on its filesystem: free space or choose another folder"
            % (params["name"], params["dest"], needed, free)
        )
    os.makedirs(staging, exist_ok=True)
    download(params["source"], params["token"], staging, params["workers"], files, module.run_command)
    found = files_.problems(staging, files)
    files_.discard(staging, found)  # the next run brings them again; what matched stays
    if found:
        module.fail_json(
            msg="%s (%s): not as the publisher's, nothing moved into place: %s"
            % (params["name"], params["dest"], "; ".join(found)),
            problems=found,
        )
    return needed


def _listed(module, source, dest):
    """The publisher's files: the hub's listing, or for a file store the list given as data."""
    params = module.params
    missing = [key for key in NEEDS[source["hub"]] if not source.get(key)]
    if source["hub"] in STORES and params["published"] is None:
        missing.append("published")
    if missing:
        module.fail_json(
            msg="%s (%s): a %s source needs %s" % (params["name"], dest, source["hub"], ", ".join(missing))
        )
    if source["hub"] in STORES:
        try:
            return files_.published_list(params["published"], params["name"])
        except ValueError as exc:
            module.fail_json(
                msg="%s (%s): the publisher's list (%s) cannot be used: %s"
                % (params["name"], dest, source.get("files") or "published", exc)
            )
    try:
        return hub_files(source, params["token"])
    except HubError as exc:
        module.fail_json(msg="%s (%s): %s" % (params["name"], dest, exc))


def main():
    module = AnsibleModule(
        argument_spec={
            "name": {"type": "str", "required": True},
            "dest": {"type": "path", "required": True},
            "source": {
                "type": "dict",
                "required": True,
                "options": {
                    "hub": {"type": "str", "required": True, "choices": sorted(NEEDS)},
                    "repo": {"type": "str"},
                    "revision": {"type": "str"},
                    "url": {"type": "str"},
                    "files": {"type": "str"},
                    "endpoint": {"type": "str"},
                },
            },
            "published": {"type": "raw"},
            "token": {"type": "raw", "no_log": True},
            "workers": {"type": "int", "default": 8},
            "verify": {"type": "str", "choices": ["quick", "full"], "default": "quick"},
        },
        supports_check_mode=True,
    )
    params = module.params
    dest = params["dest"].rstrip("/")
    source = {key: value for key, value in params["source"].items() if value}
    start = time.monotonic()
    # A file store's list is data (it costs nothing); a hub is asked only when the stamp does not answer.
    files = _listed(module, source, dest) if source["hub"] in STORES else None
    if params["verify"] == "quick" and files_.stamped(dest, source, files):
        # A pinned revision's files do not change: the stamp's list is the publisher's (the hub is not asked).
        files = files_.read_stamp(dest)["files"]
        module.exit_json(changed=False, files=files, bytes=sum(e["size"] for e in files), fetched_bytes=0, seconds=0.0)
    files = files or _listed(module, source, dest)
    total = sum(entry["size"] for entry in files)
    result = {"files": files, "bytes": total, "fetched_bytes": 0, "seconds": 0.0}
    there = files_.stamped(dest, source, files) and not files_.problems(dest, files)
    if there or module.check_mode:
        module.exit_json(changed=not there, **result)
    staging = files_.staging_folder(dest)
    if os.path.isdir(dest) and not os.path.isdir(staging):
        os.rename(dest, staging)  # its files that match are kept; the client fetches the rest
    try:
        result["fetched_bytes"] = _fetch(module, staging, files)
    except HubError as exc:
        module.fail_json(msg="%s (%s): %s; what came is kept for the next run" % (params["name"], dest, exc))
    shutil.rmtree(os.path.join(staging, ".cache"), ignore_errors=True)  # the client's own bookkeeping
    files_.write_stamp(staging, source, files)
    files_.put_in_place(staging, dest)
    result["seconds"] = round(time.monotonic() - start, 1)
    module.exit_json(changed=True, **result)


if __name__ == "__main__":
    main()
