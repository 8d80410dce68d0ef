# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""A planned service that the planner adds beside the profile's (an exporter, a group guard).

Pure function; no Ansible imports. The entry has every field a service of the plan has
(data/plan-v1.schema.json), with the values of a program on the host that serves no API.
"""

from __future__ import annotations


def service_entry(name, kind, argv, runtime="host", **extra):
    """The plan's entry of service ``name`` of ``kind`` running ``argv`` (``extra`` sets other fields)."""
    entry = {
        "name": name,
        "kind": kind,
        "role": kind,
        "argv": argv,
        "env": {},
        "image": None,
        "runtime": runtime,
        "ports": [],
        "after": [],
        "after_started": [],
        "unit": "k3-%s" % name,
        "ranks": {},
        "serves_http": False,
        "url": None,
        "health": None,
        "container": {},
    }
    entry.update(extra)
    return entry
