#!/usr/bin/python
# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Check one host against its part of the plan (addresses, ports, proxies, disk, /dev/shm); changes nothing."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: preflight_host
short_description: Check a host against its part of the plan before anything is changed
version_added: 0.1.0
description:
  - Reads only what the checks use, and returns one problem per finding (host, what is wrong, the fix).
  - C(addresses) - the planned address O(ip) is an address of the host (C(ip -j addr), or C(/sys/class/net)
    and a socket ioctl without iproute2), and O(nic) and the planned C(*_SOCKET_IFNAME) variables name the
    interface that owns it.
  - C(ports) - every planned port (with C(count) ranges) is free, or held by the service's own unit
    (C(k3-<service>), the plan's C(unit)); otherwise the holder is named (pid, command, unit), from
    C(/proc/net/tcp), C(/proc/net/tcp6), C(/proc/PID/fd) and C(/proc/PID/cgroup) (a docker container by its name).
  - C(proxies) - no proxy variable (C(http_proxy), C(https_proxy), C(all_proxy), any case) in a service's planned
    environment, or inherited by it (host runtime - C(/etc/environment), C(systemctl show-environment); docker
    runtime - docker's systemd drop-ins, C(/etc/docker/daemon.json) and C(/root/.docker/config.json) C(proxies)),
    unless C(no_proxy) / C(NO_PROXY) covers every address the service talks to (O(talks_to) and O(ip)).
  - C(space) - each checkpoint folder of O(model_paths) exists (unless it is fetched from its hub later in the run),
    or, when staged from O(sources), its source does and the filesystem has room for what is still to copy; at least
    O(min_free_bytes) stays free.
  - C(shm) - C(/dev/shm) is at least what the services need (docker with C(--ipc host) - the planned C(--shm-size);
    host runtime - O(shm_bytes)).
  - C(ssh) - when O(ssh) is given (the firewall is about to admit SSH only from some networks), this run's own SSH
    session (C(SSH_CONNECTION) of the module or of its nearest ancestor, as the host sees it) comes from one of
    O(ssh.networks) to one of O(ssh.ports); otherwise the firewall would cut the controller off.
  - Then, for the connection test, listens on the O(listen) ports (after the port check has read the host) and
    returns once they are all listening; a detached process greets every connection and exits as soon as every
    expected host has said hello, or after O(listen_timeout) seconds. A port in use is left to its holder.
    M(kimi_k3.serving.preflight_probe) on the other hosts then connects.
  - In the same round trip, for the stages after it in the run, it describes the checkpoint folders of
    O(describe) (as M(kimi_k3.serving.model_manifest) does; the prerequisites stage compares them across
    nodes) and reads the state of the units of O(units) (C(systemctl is-active); the engine stage restarts the
    node 0 of a follower that is down). Neither is a check of its own.
options:
  host:
    description: This host's inventory name (named in the problems).
    type: str
    required: true
  ip:
    description: The plan's address of this host (C(hosts[host].ip)).
    type: str
    required: true
  services:
    description: This host's planned services (C(hosts[host].services)).
    type: list
    elements: dict
    default: []
  nic:
    description: The inventory's C(k3_nic) of this host, if set.
    type: str
  talks_to:
    description: Service name to the addresses it connects to (from M(kimi_k3.serving.preflight_pairs)).
    type: dict
    default: {}
  model_paths:
    description: Checkpoint folders to check, each C({path, draft, fetched}); only on hosts with vLLM services.
    type: list
    elements: dict
    default: []
  sources:
    description: Checkpoint folder to the folder it is staged from (C(k3_model_weights_sources)).
    type: dict
    default: {}
  min_free_bytes:
    description: Bytes that must stay free on the checkpoint's filesystem (after staging).
    type: int
    default: 5368709120
  shm_bytes:
    description: Size of /dev/shm a vLLM service on the host runtime needs.
    type: int
    default: 1073741824
  checks:
    description: Which checks run (C(addresses), C(ports), C(proxies), C(space), C(shm), C(ssh)); a missing key runs it.
    type: dict
    default: {}
  ssh:
    description: What the firewall will admit for SSH; left out (nothing checked) when the firewall is the site's.
    type: dict
    suboptions:
      networks:
        description: The networks SSH is admitted from (C(k3_admin_networks)).
        type: list
        elements: str
        default: []
      ports:
        description: The ports SSH is admitted on.
        type: list
        elements: int
        default: [22]
  docker_client_config:
    description: The docker client configuration whose C(proxies) the client injects into containers.
    type: path
    default: /root/.docker/config.json
  listen:
    description: Ports to listen on for the connection test, each C({port, name, expect}) (C(expect) the hosts that
      connect, from M(kimi_k3.serving.preflight_pairs)).
    type: list
    elements: dict
    default: []
  listen_timeout:
    description: Longest time the listeners stay up, in seconds.
    type: float
    default: 15
  describe:
    description: Checkpoint folders to describe (returned in RV(manifests)).
    type: list
    elements: path
    default: []
  describe_mode:
    description: How much of each large file is hashed (O(kimi_k3.serving.model_manifest#module:mode)).
    type: str
    choices: [quick, full]
    default: quick
  units:
    description: Units whose state to read (returned in RV(unit_states)).
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - kimi_k3.serving.attributes.read_only
author:
  - kimi_k3.serving maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Check this host against the plan
  kimi_k3.serving.preflight_host:
    host: "{{ inventory_hostname }}"
    ip: "{{ plan.hosts[inventory_hostname].ip }}"
    services: "{{ plan.hosts[inventory_hostname].services }}"
    nic: "{{ k3_nic | default(omit) }}"
    model_paths: [{path: /models/Kimi-K3}]
  register: k3_host

- name: Stop on a problem
  ansible.builtin.assert:
    that: k3_host.problems | length == 0
    fail_msg: "{{ k3_host.problems | join('\n') }}"
"""

RETURN = r"""
problems:
  description: One line per problem, naming the host, what is wrong and the fix.
  returned: always
  type: list
  elements: str
  sample: ["host k3-sb-dp1: k3_nic: k3_nic is eth9, but 10.77.0.13 is on eth0: there is no interface eth9 on this
           host (it has eth0, lo). Fix: set k3_nic to eth0 (the interface must own the host's address, as NIC_NAME
           must own LOCAL_IP)"]
interfaces:
  description: Interfaces with their state and addresses.
  returned: always
  type: list
  elements: dict
  sample: [{"name": "eth0", "state": "UP", "addresses": ["10.77.0.13"]}]
listeners:
  description: Listening TCP sockets on planned ports, with the process holding each.
  returned: always
  type: list
  elements: dict
  sample: [{"port": 8000, "address": "0.0.0.0", "pid": 812, "command": "vllm serve ...", "unit": "k3-engine"}]
folders:
  description: What was found for each checkpoint folder.
  returned: always
  type: list
  elements: dict
shm_bytes:
  description: Size of /dev/shm (null when there is none).
  returned: always
  type: int
listener:
  description: Ports listened on for the connection test, ports already held (answered by their holder), errors.
  returned: always
  type: dict
  sample: {"listened": [8100], "held": [], "errors": {}, "token": "6f1c0e52a9d3b471"}
manifests:
  description: One manifest per folder of O(describe), as M(kimi_k3.serving.model_manifest) returns them.
  returned: always
  type: list
  elements: dict
ssh_session:
  description: This run's SSH session as the host sees it (null when not over SSH or not asked).
  returned: always
  type: dict
  sample: {"client": "10.77.0.1", "client_port": 51514, "server": "10.77.0.11", "port": 22}
unit_states:
  description: The state of each unit of O(units), in their order (C(systemctl is-active)'s lines).
  returned: always
  type: list
  elements: str
  sample: ["active"]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kimi_k3.serving.plugins.module_utils.checkpoint_manifest import MIB, manifest
from ansible_collections.kimi_k3.serving.plugins.module_utils.preflight_checks import (
    check_address,
    check_ports,
    check_shm,
    check_space,
    check_ssh,
)
from ansible_collections.kimi_k3.serving.plugins.module_utils.preflight_common import messages, port_range
from ansible_collections.kimi_k3.serving.plugins.module_utils.preflight_connections import listen_problems
from ansible_collections.kimi_k3.serving.plugins.module_utils.preflight_gather import (
    docker_environment,
    folders,
    host_environment,
    interfaces,
    listeners,
    resolve,
    shm_size,
    ssh_session,
)
from ansible_collections.kimi_k3.serving.plugins.module_utils.preflight_listener import spawn_listener
from ansible_collections.kimi_k3.serving.plugins.module_utils.preflight_proxies import check_proxies


def unit_states(module, units):
    """systemctl is-active over ``units``: one state a unit, in their order ("unknown" without systemctl)."""
    if not units:
        return []
    systemctl = module.get_bin_path("systemctl")
    if not systemctl:
        return ["unknown"] * len(units)
    _rc, out, _err = module.run_command([systemctl, "is-active"] + list(units))
    states = out.split()
    return (states + ["unknown"] * len(units))[: len(units)]


def main():
    module = AnsibleModule(
        argument_spec={
            "host": {"type": "str", "required": True},
            "ip": {"type": "str", "required": True},
            "services": {"type": "list", "elements": "dict", "default": []},
            "nic": {"type": "str"},
            "talks_to": {"type": "dict", "default": {}},
            "model_paths": {"type": "list", "elements": "dict", "default": []},
            "sources": {"type": "dict", "default": {}},
            "min_free_bytes": {"type": "int", "default": 5 * 1024**3},
            "shm_bytes": {"type": "int", "default": 1024**3},
            "checks": {"type": "dict", "default": {}},
            "docker_client_config": {"type": "path", "default": "/root/.docker/config.json"},
            "listen": {"type": "list", "elements": "dict", "default": []},
            "listen_timeout": {"type": "float", "default": 15},
            "describe": {"type": "list", "elements": "path", "default": []},
            "describe_mode": {"type": "str", "choices": ["quick", "full"], "default": "quick"},
            "units": {"type": "list", "elements": "str", "default": []},
            "ssh": {
                "type": "dict",
                "options": {
                    "networks": {"type": "list", "elements": "str", "default": []},
                    "ports": {"type": "list", "elements": "int", "default": [22]},
                },
            },
        },
        supports_check_mode=True,
    )
    p = module.params
    host, services = p["host"], p["services"]

    def wanted(name):
        return bool(p["checks"].get(name, True))

    problems = []
    result = {"interfaces": [], "listeners": [], "folders": [], "shm_bytes": None, "listener": {}}
    if wanted("addresses"):
        result["interfaces"] = interfaces(module)
        problems += check_address(
            host, p["ip"], result["interfaces"], services, p["nic"] or None, resolved=resolve(p["ip"])
        )
    if wanted("ports"):
        ports = {n for svc in services for port in svc.get("ports") or [] for n in port_range(port)}
        result["listeners"] = listeners(ports)
        problems += check_ports(host, services, result["listeners"])
    if wanted("proxies"):
        docker = any(svc.get("runtime") == "docker" for svc in services)
        problems += check_proxies(
            host,
            p["ip"],
            services,
            p["talks_to"],
            host_environment(module),
            docker_environment(p["docker_client_config"]) if docker else [],
        )
    engines = any(svc.get("kind") == "vllm" for svc in services)
    if wanted("space") and engines and p["model_paths"]:
        result["folders"] = folders(p["model_paths"], p["sources"])
        problems += check_space(host, result["folders"], p["min_free_bytes"])
    if wanted("shm"):
        result["shm_bytes"] = shm_size()
        problems += check_shm(host, services, result["shm_bytes"], p["shm_bytes"])
    result["ssh_session"] = None
    if wanted("ssh") and p["ssh"]:
        result["ssh_session"] = ssh_session()
        problems += check_ssh(host, result["ssh_session"], p["ssh"]["networks"], p["ssh"]["ports"])
    result["manifests"] = [manifest(path, p["describe_mode"], 16 * MIB) for path in p["describe"]]
    result["unit_states"] = unit_states(module, p["units"])
    if p["listen"]:
        # Last: the port check above has read the host without these sockets.
        result["listener"] = spawn_listener(p["listen"], host, p["listen_timeout"])
        problems += listen_problems(host, result["listener"])
    module.exit_json(changed=False, problems=messages(problems), **result)


if __name__ == "__main__":
    main()
