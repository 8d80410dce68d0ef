#!/usr/bin/python
# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The fabric check's vendor tools on one host: run their commands side by side and parse them."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: fabric_tool
short_description: Run the vendors' fabric test tools on a host and parse what they print
version_added: 0.5.0
description:
  - With O(state=run), runs every command of O(runs) at once (each to its end or O(timeout)) and parses
    its output with its parser. nccl-tests and rccl-tests (V(collective)), CANN's HCCL test (V(hccl)),
    perftest's C(ib_write_bw), C(ib_read_bw) and C(ib_write_lat) (V(perftest)), and C(hccn_tool)'s
    C(-link), C(-net_health), C(-ping) and C(-ip) (V(hccn_link), V(hccn_net_health), V(hccn_ping),
    V(hccn_ip)). A failed tool is a result (its C(cause)), not a failed task, so that the report names
    every group and pair.
  - With O(state=serve), starts every command of O(runs) in the background (perftest's servers, which
    end after their one client), their output and process IDs under O(workdir).
  - With O(state=stop), ends what O(state=serve) started and removes O(workdir).
  - The commands come from the plan (C(kimi_k3.serving.fabric_plan)); nothing is left on the host once
    the check has stopped its servers, so no step reports a change.
options:
  state:
    description: What to do.
    type: str
    choices: [run, serve, stop]
    default: run
  runs:
    description: The commands, each with the name it is reported under and its parser.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The check's name.
        type: str
        required: true
      argv:
        description: The command; the first element is the program.
        type: list
        elements: str
        required: true
      parser:
        description: How to read its output.
        type: str
        choices: [collective, hccl, perftest, hccn_link, hccn_net_health, hccn_ping, hccn_ip]
        required: true
  timeout:
    description: Seconds a command may run (O(state=run)); one still running then is ended and failed.
    type: int
    default: 900
  workdir:
    description: Where the background commands' output and process IDs are kept.
    type: path
    default: /run/kimi-k3-fabric
  environment:
    description: Variables for the commands' environment.
    type: dict
    default: {}
attributes:
  check_mode:
    support: full
    description: In check mode nothing runs; the result lists the commands.
  diff_mode:
    support: none
    description: There is no file to show.
  idempotent:
    support: full
    description: The tools measure and leave nothing behind once stopped; every step reports changed false.
author:
  - kimi_k3.serving maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Run nccl-tests' all_reduce_perf across a group from its first host
  kimi_k3.serving.fabric_tool:
    runs:
      - name: all_reduce_perf gb300-n0/engine
        parser: collective
        argv: [mpirun, --allow-run-as-root, -np, "16", -H, "10.0.0.1:8,10.0.0.2:8",
               /opt/nccl-tests/build/all_reduce_perf, -b, "8", -e, 8G, -f, "2", -g, "1"]
  register: measured

- name: Start perftest's server for a pair
  kimi_k3.serving.fabric_tool:
    state: serve
    runs:
      - {name: ib_write_bw p0 -> d0 server, parser: perftest, argv: [ib_write_bw, -d, mlx5_0, -F, --report_gbits]}
"""

RETURN = r"""
results:
  description: One per command (O(state=run)), in the order of O(runs).
  returned: when state is run
  type: list
  elements: dict
  contains:
    name:
      description: The check's name.
      type: str
    argv:
      description: The command.
      type: list
      elements: str
    rc:
      description: The exit status (null when it did not run or was ended).
      type: int
    parsed:
      description: What the parser read (rows, figures, C(failed), C(cause)); a list for V(hccn_ping).
      type: raw
    failed:
      description: Whether the tool failed (its exit status, its output, or it is not installed).
      type: bool
    missing:
      description: Whether the program is not installed on this host.
      type: bool
    cause:
      description: Why it failed, in a sentence.
      type: str
    seconds:
      description: How long it ran.
      type: float
    output:
      description: What it printed (standard output, then standard error), its last 64 KiB.
      type: str
started:
  description: The commands started in the background (O(state=serve)).
  returned: when state is serve
  type: list
  elements: str
stopped:
  description: Process IDs ended (O(state=stop)).
  returned: when state is stop
  type: list
  elements: int
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kimi_k3.serving.plugins.module_utils.fabric_runner import run_all, serve_all, stop_all

RUN = {
    "name": {"type": "str", "required": True},
    "argv": {"type": "list", "elements": "str", "required": True},
    "parser": {
        "type": "str",
        "required": True,
        "choices": ["collective", "hccl", "perftest", "hccn_link", "hccn_net_health", "hccn_ping", "hccn_ip"],
    },
}


def main():
    module = AnsibleModule(
        argument_spec={
            "state": {"type": "str", "choices": ["run", "serve", "stop"], "default": "run"},
            "runs": {"type": "list", "elements": "dict", "default": [], "options": RUN},
            "timeout": {"type": "int", "default": 900},
            "workdir": {"type": "path", "default": "/run/kimi-k3-fabric"},
            "environment": {"type": "dict", "default": {}},
        },
        supports_check_mode=True,
    )
    p = module.params
    if module.check_mode:
        module.exit_json(changed=False, results=[], started=[], stopped=[], argv=[r["argv"] for r in p["runs"]])
    if p["state"] == "serve":
        module.exit_json(changed=False, started=serve_all(p["runs"], p["workdir"], p["environment"]))
    if p["state"] == "stop":
        module.exit_json(changed=False, stopped=stop_all(p["workdir"]))
    module.exit_json(changed=False, results=run_all(module.run_command, p["runs"], p["timeout"], p["environment"]))


if __name__ == "__main__":
    main()
