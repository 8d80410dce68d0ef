#!/usr/bin/python
# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Read how far a transfer into a folder has come, and record it in the transfer's progress log."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: transfer_progress
short_description: Read how far a transfer into a folder has come (bytes, rate, time left)
version_added: 0.2.0
description:
  - Measures the bytes the files under O(path) hold on disk (their allocated blocks, capped at
    their sizes), compares them with O(total) and with the first reading of the same O(job) in
    the progress log O(log), and appends this reading there (JSON lines, one per reading).
  - The rate is taken over the job so far; the time left follows from it. The first reading of a
    job has neither.
  - Used between the polls of a long asynchronous transfer (a checkpoint's fetch or fan-out) so
    that the playbook's output shows it as it goes.
options:
  name:
    description: The transfer's name in the text (model or draft).
    type: str
    required: true
  path:
    description: The folders the transfer writes into (missing ones count as empty).
    type: list
    elements: path
    required: true
  total:
    description: The bytes the transfer brings when it is done.
    type: int
    required: true
  job:
    description: The transfer's job (its asynchronous job id), which the log's readings are grouped by.
    type: str
    required: true
  log:
    description: The progress log (JSON lines); its folder is made owner-only.
    type: path
    required: true
attributes:
  check_mode:
    support: full
    description: Reads as in a normal run and records nothing.
  diff_mode:
    support: none
    description: Nothing is configured.
  idempotent:
    support: full
    description: A reading; it appends to a log and changes nothing else (changed=false).
author:
  - kimi_k3.serving maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: How far the checkpoint's fetch has come
  kimi_k3.serving.transfer_progress:
    name: model
    path: [/models/.Kimi-K3.k3-partial]
    total: 1400000000000
    job: "{{ fetch_job.ansible_job_id }}"
    log: /var/lib/kimi-k3/fanout/model.progress
  register: progress

- name: Show it
  ansible.builtin.debug:
    msg: "{{ progress.line }}"
"""

RETURN = r"""
bytes:
  description: Bytes under O(path) now.
  returned: always
  type: int
total:
  description: O(total).
  returned: always
  type: int
rate:
  description: Bytes per second over the job so far (null at its first reading).
  returned: always
  type: float
left:
  description: Seconds left at that rate (null at the job's first reading).
  returned: always
  type: float
line:
  description: "The reading in words, for example C(model: 1.2 GB of 2.0 GB (60 %), 230.0 MB/s, 4 s left)."
  returned: always
  type: str
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kimi_k3.serving.plugins.module_utils import transfer_progress as progress


def main():
    module = AnsibleModule(
        argument_spec={
            "name": {"type": "str", "required": True},
            "path": {"type": "list", "elements": "path", "required": True},
            "total": {"type": "int", "required": True},
            "job": {"type": "str", "required": True},
            "log": {"type": "path", "required": True},
        },
        supports_check_mode=True,
    )
    params = module.params
    done = sum(progress.bytes_in(folder) for folder in params["path"])
    first = progress.first_sample(params["log"], params["job"])
    reading = progress.sample(first, params["job"], time.time(), done, params["total"])
    if not module.check_mode:
        progress.record(params["log"], reading)
    module.exit_json(
        changed=False,
        bytes=done,
        total=params["total"],
        rate=reading["rate"],
        left=reading["left"],
        line=progress.line(params["name"], reading),
    )


if __name__ == "__main__":
    main()
