#!/usr/bin/python
# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Report the host's accelerators (NVIDIA, AMD, Huawei Ascend) and RDMA devices as facts; changes nothing."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: accelerator_facts
short_description: Gather accelerator, driver, toolkit and RDMA facts
version_added: 0.1.0
description:
  - Finds the vendor tools (C(nvidia-smi), C(amd-smi), C(rocm-smi), C(npu-smi), C(hccn_tool), C(ibv_devices),
    C(ibv_devinfo)) in O(tools_path), on E(PATH) and at their usual install locations
    (for example V(/usr/bin/nvidia-smi), V(/usr/local/sbin/npu-smi), V(/opt/rocm/bin/amd-smi),
    V(/usr/local/Ascend/driver/tools/hccn_tool)).
  - Runs C(nvidia-smi) (and C(nvidia-smi -L) when the table cut a name), C(amd-smi version),
    C(amd-smi static --asic) (or C(rocm-smi -i)), C(npu-smi info), and reads the driver's version files
    (C(/proc/driver/nvidia/version), C(/sys/module/amdgpu/version), C(/usr/local/Ascend/driver/version.info),
    C(/usr/local/Ascend/firmware/version.info), the CANN toolkit's install info).
  - RDMA devices come from C(/sys/class/infiniband), or from C(ibv_devinfo) / C(ibv_devices) when that is empty.
  - When several vendors are present, the first one that shows devices is reported (NVIDIA, AMD, Ascend).
  - An Ascend A3 (910C) NPU has two dies, each a device of its own; RV(ansible_facts.k3_accelerator.device_count)
    counts dies, as C(npu-smi info) lists them.
options:
  tools_path:
    description: Folders searched for the tools before E(PATH) and the usual locations.
    type: list
    elements: path
    default: []
  sys_root:
    description:
      - Root under which C(/proc), C(/sys), C(/etc) and C(/usr/local/Ascend) files are read, for a copied or test tree.
      - Tools are always run from the host.
    type: path
    default: /
extends_documentation_fragment:
  - kimi_k3.serving.attributes.read_only
notes:
  - Keys are always present; a fact that could not be found is V(null) (or an empty list).
author:
  - kimi_k3.serving maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Gather accelerator facts
  kimi_k3.serving.accelerator_facts:

- name: Fail when this host does not have the expected GPUs
  ansible.builtin.assert:
    that:
      - ansible_facts.k3_accelerator.vendor == "nvidia"
      - ansible_facts.k3_accelerator.device_count == 8

- name: Also look in a side-loaded tools folder
  kimi_k3.serving.accelerator_facts:
    tools_path:
      - /opt/k3/bin
"""

RETURN = r"""
ansible_facts:
  description: The facts.
  returned: always
  type: dict
  contains:
    k3_accelerator:
      description: Accelerators and RDMA devices of the host.
      returned: always
      type: dict
      contains:
        vendor:
          description: V(nvidia), V(amd), V(ascend), or V(null) when none was found.
          type: str
          sample: nvidia
        device_count:
          description: Number of devices (GPUs, logical AMD partitions, Ascend dies); 0 when none was found.
          type: int
          sample: 8
        device_models:
          description: One model name per device, as the vendor tool prints it.
          type: list
          elements: str
          sample: ["NVIDIA B200", "NVIDIA B200"]
        driver_version:
          description: Kernel driver version (NVIDIA driver, amdgpu DKMS module, Ascend driver package).
          type: str
          sample: 580.126.09
        cuda_version:
          description: CUDA version the NVIDIA driver supports (C(CUDA UMD Version) from R610).
          type: str
          sample: "13.0"
        rocm_version:
          description: ROCm version reported by C(amd-smi version).
          type: str
          sample: 6.4.1
        cann_version:
          description: Installed CANN toolkit version.
          type: str
          sample: 8.2.RC1
        firmware_version:
          description: Ascend firmware version, when known.
          type: str
          sample: 7.7.0.1.231
        rdma_devices:
          description: RDMA devices and their ports.
          type: list
          elements: dict
          sample: [{"name": "mlx5_0", "ports": [{"port": 1, "state": "ACTIVE", "link_layer": "InfiniBand",
                                                  "rate": "400 Gb/sec (4X NDR)"}]}]
        tools:
          description: Each tool looked for, with the path it was found at or V(null).
          type: dict
          sample: {"nvidia-smi": "/usr/bin/nvidia-smi", "npu-smi": null}
        sources:
          description: >-
            For each fact found, the command (V(command: <argv>)) or file (V(file: <path>)) it came from.
          type: dict
          sample: {"driver_version": "command: /usr/bin/nvidia-smi"}
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kimi_k3.serving.plugins.module_utils.accelerator import find_tool, gather


def main():
    module = AnsibleModule(
        argument_spec={
            "tools_path": {"type": "list", "elements": "path", "default": []},
            "sys_root": {"type": "path", "default": "/"},
        },
        supports_check_mode=True,
    )
    root = module.params["sys_root"]

    def under_root(path):
        return os.path.join(root, path.lstrip("/"))

    def read(path):
        try:
            with open(under_root(path), encoding="utf-8", errors="replace") as handle:
                return handle.read()
        except OSError:
            return None

    def listdir(path):
        try:
            return os.listdir(under_root(path))
        except OSError:
            return None

    def which(name):
        return find_tool(
            name,
            module.params["tools_path"],
            module.get_bin_path,
            lambda path: os.path.isfile(path) and os.access(path, os.X_OK),
        )

    def run(argv):
        return module.run_command(argv, environ_update={"LC_ALL": "C", "LANG": "C"})

    facts = gather(run, read, lambda path: os.path.exists(under_root(path)), which, listdir=listdir)
    module.exit_json(changed=False, ansible_facts={"k3_accelerator": facts})


if __name__ == "__main__":
    main()
