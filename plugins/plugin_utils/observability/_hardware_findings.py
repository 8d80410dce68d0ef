# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""What a support bundle takes of a host's hardware: the vendor tools' reports and the kernel's lines.

Pure functions; no Ansible imports. For each host of the plan:

- the kernel log's lines about the hardware (``dmesg``): NVIDIA XID and ECC lines, AMD RAS and
  ECC lines, Ascend device-driver lines, mlx5 and InfiniBand errors, machine checks and EDAC;
- on an accelerator host (one that runs an engine) the platform's own tools, where they are
  installed: ``nvidia-smi -q`` and its topology, ``amd-smi`` and ``rocm-smi``, ``npu-smi info``
  and, for every device NIC, the ``hccn_tool`` link, network health, address and route checks that
  the vLLM Ascend multi-node guide runs before a multi-node deployment; ``ibv_devinfo`` on every
  accelerator host (the RDMA ports).

A program a host does not have is noted in the bundle, not an error: the sandbox has none.
"""

from __future__ import annotations

# Kernel lines worth a look, per platform (the profile's ``platform``), plus those of every host.
KERNEL_PATTERNS = {
    "common": (
        r"Hardware Error",
        r"\bmce: ",
        r"EDAC",
        r"mlx5_core.*([Ee]rr|[Ff]ail|[Tt]imeout|down)",
        r"(ib_core|infiniband).*([Ee]rr|[Ff]ail)",
    ),
    "blackwell": (
        r"NVRM: Xid",
        r"NVRM: .*(ECC|[Rr]ow [Rr]emap|[Uu]ncorrectable)",
        r"nvidia[-_]peermem",
        r"nvidia-nvswitch|nvlink",
    ),
    "rocm": (r"amdgpu.*(ECC|RAS|ras|[Pp]oison|[Uu]ncorrectable|timeout|GPU reset)",),
    "ascend": (r"devdrv|davinci|drv_devmng|hccn|[Aa]scend.*([Ee]rr|[Ff]ault)",),
}

# hccn_tool's checks of a device NIC (the vLLM Ascend guide's "Verify Multi-node Communication").
HCCN_CHECKS = (("link", "-link"), ("net-health", "-net_health"), ("ip", "-ip"), ("route", "-route"))
HCCN_TOOL = "hccn_tool"
# Where the Ascend driver installs its tools (not on PATH by default).
TOOL_DIRS = ["/usr/local/Ascend/driver/tools", "/usr/local/sbin", "/usr/local/bin"]


def _tools(platform, devices):
    if platform == "blackwell":
        return [("nvidia-smi-q", ["nvidia-smi", "-q"]), ("nvidia-smi-topo", ["nvidia-smi", "topo", "-m"])]
    if platform == "rocm":
        return [("amd-smi-list", ["amd-smi", "list"]), ("rocm-smi", ["rocm-smi"])]
    if platform == "ascend":
        found = [("npu-smi-info", ["npu-smi", "info"])]
        for device in range(devices):
            for name, flag in HCCN_CHECKS:
                found.append(("hccn-%d-%s" % (device, name), [HCCN_TOOL, "-i", str(device), flag, "-g"]))
        return found
    return []


def _accelerator_host(plan, host):
    services = (plan.get("hosts") or {}).get(host, {}).get("services") or []
    return any(service.get("kind") == "vllm" for service in services)


def bundle_hardware(plan, host):
    """``{commands: [{name, argv}], kernel_patterns: [regex], tool_dirs: [path]}`` for ``host``."""
    platform = plan.get("platform") or ""
    patterns = list(KERNEL_PATTERNS["common"]) + list(KERNEL_PATTERNS.get(platform, ()))
    commands = []
    if _accelerator_host(plan, host):
        devices = int((plan.get("parameters") or {}).get("devices_per_node") or 0)
        tools = _tools(platform, devices) + [("ibv-devinfo", ["ibv_devinfo"])]
        commands = [{"name": name, "argv": argv} for name, argv in tools]
    return {"commands": commands, "kernel_patterns": patterns, "tool_dirs": list(TOOL_DIRS)}
