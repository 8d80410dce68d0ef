#!/usr/bin/python
# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Describe a model checkpoint folder so that nodes can be compared."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: model_manifest
short_description: A manifest of a model checkpoint folder (file sizes and checksums)
version_added: 0.1.0
description:
  - Lists every file under each given folder with its size and a SHA-256 checksum, and returns one digest
    per folder, so that the same checkpoint revision can be confirmed on every node.
  - In C(quick) mode (the default) small files (configuration, tokenizer, index) are hashed whole and large
    files (weights) by their size plus their first and last MiB, which stays fast for terabyte checkpoints
    and on shared storage. C(full) hashes every byte.
  - A missing folder is reported, not an error; the caller decides.
options:
  paths:
    description: Checkpoint folders.
    type: list
    elements: path
    required: true
  mode:
    description: How much of each large file is hashed.
    type: str
    choices: [quick, full]
    default: quick
  small_file_bytes:
    description: Files up to this size are always hashed whole.
    type: int
    default: 16777216
extends_documentation_fragment:
  - kimi_k3.serving.attributes.read_only
author:
  - kimi_k3.serving maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Describe the checkpoint and the DSpark draft
  kimi_k3.serving.model_manifest:
    paths: [/models/Kimi-K3, /models/Inferact-Kimi-K3-DSpark]
  register: k3_manifest
"""

RETURN = r"""
manifests:
  description: One entry per path.
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: The folder.
      type: str
    exists:
      description: Whether it exists and is a folder.
      type: bool
    digest:
      description: SHA-256 over the sorted (file, size, checksum) entries; equal digests mean the same revision.
      type: str
    files:
      description: Number of files.
      type: int
    bytes:
      description: Total size in bytes.
      type: int
    entries:
      description: Per file (relative path) its size and checksum.
      type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kimi_k3.serving.plugins.module_utils.checkpoint_manifest import MIB, manifest


def main():
    module = AnsibleModule(
        argument_spec={
            "paths": {"type": "list", "elements": "path", "required": True},
            "mode": {"type": "str", "choices": ["quick", "full"], "default": "quick"},
            "small_file_bytes": {"type": "int", "default": 16 * MIB},
        },
        supports_check_mode=True,
    )
    out = [manifest(p, module.params["mode"], module.params["small_file_bytes"]) for p in module.params["paths"]]
    module.exit_json(changed=False, manifests=out)


if __name__ == "__main__":
    main()
