#!/usr/bin/python
# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The fabric check's TCP bandwidth test on one host: serve, measure, stop."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: fabric_tcp
short_description: Measure the TCP bandwidth between two hosts with iperf3
version_added: 0.4.0
description:
  - With O(state=serve), starts an iperf3 server on O(port) as a daemon (its process ID in O(pidfile)),
    for the other hosts' measurements; a server already running from that PID file is kept.
  - With O(state=measure), runs the iperf3 client against O(server) for O(seconds) with O(streams)
    parallel streams (the server sending with O(reverse)), and returns the figure the receiving side
    counted. A failed measurement is a result (its C(error)), not a failed task, so that the report
    names every pair.
  - With O(state=stop), ends the server of O(pidfile) and removes the file.
  - The serve and stop steps change the host only for the duration of the check, and report no change, since
    nothing is left once the check has stopped its servers.
options:
  state:
    description: What to do.
    type: str
    choices: [serve, measure, stop]
    required: true
  program:
    description: The iperf3 program (a name looked up on the PATH, or a path).
    type: str
    default: iperf3
  port:
    description: The server's TCP port.
    type: int
    default: 5201
  pidfile:
    description: Where the server's process ID is kept.
    type: path
    default: /run/kimi-k3-fabric-iperf3.pid
  server:
    description: The server's address (O(state=measure)).
    type: str
  pair:
    description: The name of the pair measured, returned with the result.
    type: str
    default: ""
  seconds:
    description: How long the measurement sends.
    type: int
    default: 3
  streams:
    description: Parallel TCP streams.
    type: int
    default: 4
  reverse:
    description: Whether the server sends (the data flows towards this host).
    type: bool
    default: false
  environment:
    description: Variables for iperf3's environment (e.g. C(LD_LIBRARY_PATH) for an unpacked copy).
    type: dict
    default: {}
attributes:
  check_mode:
    support: full
    description: In check mode nothing is started, measured or stopped; the result says what would run.
  diff_mode:
    support: none
    description: There is no file to show.
  idempotent:
    support: full
    description:
      - A server is started only where none runs from the PID file and lives until the stop step; a measurement
        changes nothing. Every step reports changed false.
author:
  - kimi_k3.serving maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Serve on every host that is measured against
  kimi_k3.serving.fabric_tcp:
    state: serve
    port: 5201

- name: Measure from the decode host the KV cache's path from its prefill host (the server sends)
  kimi_k3.serving.fabric_tcp:
    state: measure
    server: 10.0.0.11
    pair: "p0 -> d0"
    reverse: true
  register: measured
"""

RETURN = r"""
pair:
  description: The pair measured (O(state=measure)).
  returned: when state is measure
  type: str
gbps:
  description: Gigabits per second the receiving side counted; null when the measurement failed.
  returned: when state is measure
  type: float
  sample: 20.97
retransmits:
  description: TCP retransmissions of the sending side.
  returned: when state is measure
  type: int
error:
  description: Why there is no figure (iperf3's own message, or why it could not run).
  returned: when state is measure
  type: str
argv:
  description: The command that ran (or would run in check mode).
  returned: always
  type: list
  elements: str
started:
  description: Whether a server was started (O(state=serve)).
  returned: when state is serve and a server was started
  type: bool
stopped:
  description: Whether a running server was ended (O(state=stop)).
  returned: when state is stop
  type: bool
missing:
  description: Whether the iperf3 program is not installed (O(state=serve); the task fails, except in check mode).
  returned: when the program is missing
  type: bool
"""

import os
import signal

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kimi_k3.serving.plugins.module_utils.fabric_iperf import client_argv, parse, server_argv


def _running(pidfile):
    """The server's PID from ``pidfile`` when that process still runs."""
    try:
        with open(pidfile, encoding="ascii") as handle:
            pid = int(handle.read().strip() or 0)
    except (OSError, ValueError):
        return None
    if pid <= 0:
        return None
    try:
        os.kill(pid, 0)
    except OSError:
        return None
    return pid


def _program(module, name):
    """The program's path, or None when it is not installed."""
    if os.path.isabs(name):
        return name if os.access(name, os.X_OK) else None
    return module.get_bin_path(name, required=False)


def serve(module, p):
    program = _program(module, p["program"])
    argv = server_argv(program or p["program"], p["port"], p["pidfile"])
    # changed stays false: the server lives for the check only (the stop step ends it), nothing stays.
    if _running(p["pidfile"]):
        return {"changed": False, "argv": argv}
    if program is None:
        msg = "%s is not installed on this host (fabric_iperf3; fabric_install installs the distribution's iperf3)"
        if module.check_mode:
            return {"changed": False, "argv": argv, "missing": True, "msg": msg % p["program"]}
        module.fail_json(msg=msg % p["program"], argv=argv, missing=True)
    if module.check_mode:
        return {"changed": False, "argv": argv}
    rc, out, err = module.run_command(argv, environ_update=p["environment"])
    if rc != 0:
        module.fail_json(msg="iperf3 could not serve on port %d: %s" % (p["port"], (err or out).strip()), argv=argv)
    return {"changed": False, "argv": argv, "started": True}


def measure(module, p):
    if not p["server"]:
        module.fail_json(msg="fabric_tcp: state=measure needs server (the address to measure against)")
    program = _program(module, p["program"])
    argv = client_argv(program or p["program"], p["server"], p["port"], p["seconds"], p["streams"], p["reverse"])
    result = {"changed": False, "argv": argv, "pair": p["pair"]}
    if module.check_mode or program is None:
        why = "not measured in check mode" if module.check_mode else "%s is not installed here" % p["program"]
        return dict(result, gbps=None, retransmits=None, seconds=None, error=why)
    rc, out, err = module.run_command(argv, environ_update=p["environment"])
    found = parse(out)
    if found["error"] and rc != 0 and err.strip():
        found["error"] = "%s (exit %d: %s)" % (found["error"], rc, err.strip().splitlines()[-1])
    return dict(result, **found)


def stop(module, p):
    pid = _running(p["pidfile"])
    result = {"changed": False, "argv": ["kill", str(pid)] if pid else [], "stopped": bool(pid)}
    if module.check_mode:
        return result
    if pid:
        os.kill(pid, signal.SIGTERM)
    try:
        os.unlink(p["pidfile"])
    except FileNotFoundError:
        pass
    return result


def main():
    module = AnsibleModule(
        argument_spec={
            "state": {"type": "str", "choices": ["serve", "measure", "stop"], "required": True},
            "program": {"type": "str", "default": "iperf3"},
            "port": {"type": "int", "default": 5201},
            "pidfile": {"type": "path", "default": "/run/kimi-k3-fabric-iperf3.pid"},
            "server": {"type": "str"},
            "pair": {"type": "str", "default": ""},
            "seconds": {"type": "int", "default": 3},
            "streams": {"type": "int", "default": 4},
            "reverse": {"type": "bool", "default": False},
            "environment": {"type": "dict", "default": {}},
        },
        supports_check_mode=True,
    )
    steps = {"serve": serve, "measure": measure, "stop": stop}
    module.exit_json(**steps[module.params["state"]](module, module.params))


if __name__ == "__main__":
    main()
