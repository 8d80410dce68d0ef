# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Parse what accelerator and RDMA tools print, and gather it into one facts dict.

Plain Python, no Ansible imports: every ``parse_*`` function takes the text a tool printed (or a file held)
and returns a dict, and :func:`gather` reaches the host only through the callables it is given, so all of it
can be tested with recorded outputs.
"""

from __future__ import annotations

import re

# Where the tools live when they are not on PATH (driver packages install them outside the usual dirs).
TOOL_PATHS = {
    "nvidia-smi": ["/usr/bin/nvidia-smi", "/usr/local/nvidia/bin/nvidia-smi"],
    "amd-smi": ["/opt/rocm/bin/amd-smi", "/usr/bin/amd-smi"],
    "rocm-smi": ["/opt/rocm/bin/rocm-smi", "/usr/bin/rocm-smi"],
    "rocminfo": ["/opt/rocm/bin/rocminfo", "/usr/bin/rocminfo"],
    "npu-smi": ["/usr/local/bin/npu-smi", "/usr/local/sbin/npu-smi"],
    "hccn_tool": ["/usr/local/Ascend/driver/tools/hccn_tool", "/usr/local/bin/hccn_tool", "/usr/bin/hccn_tool"],
    "ibv_devices": ["/usr/bin/ibv_devices"],
    "ibv_devinfo": ["/usr/bin/ibv_devinfo"],
}
TOOLS = tuple(TOOL_PATHS)

ASCEND_ROOT = "/usr/local/Ascend"
SYS_INFINIBAND = "/sys/class/infiniband"

_BUS_ID = re.compile(r"^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$")
_VERSION = re.compile(r"^\d+(?:\.[0-9A-Za-z]+)+$")


def _natural_key(name):
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def _none_if_na(value):
    value = (value or "").strip()
    return None if value in ("", "N/A", "[N/A]", "NA", "-") else value


def parse_key_value(text, sep="="):
    """``key=value`` lines (Ascend ``*.info`` files); quotes around values are dropped, comments skipped."""
    out = {}
    for line in (text or "").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or sep not in line:
            continue
        key, value = line.split(sep, 1)
        out[key.strip()] = value.strip().strip('"')
    return out


# --------------------------------------------------------------------------------------------------- NVIDIA


def parse_nvidia_smi(text):
    """The default ``nvidia-smi`` table.

    Reads the banner (``Driver Version``/``CUDA Version``, or from R610 on ``KMD Version``/``CUDA UMD Version``)
    and one row per GPU (index, name, bus id). The header separator changed from ``|---+`` to ``+---+`` at
    580; the parser depends on neither. Names longer than the column are cut by nvidia-smi and end in ``...``.
    """
    out = {"smi_version": None, "driver_version": None, "cuda_version": None, "gpus": []}
    banner = re.search(
        r"NVIDIA-SMI\s+(\S+)\s+(?:Driver|KMD) Version:\s*(\S+)(?:\s+CUDA(?: UMD)? Version:\s*(\S+))?", text or ""
    )
    if banner:
        out["smi_version"] = _none_if_na(banner.group(1))
        out["driver_version"] = _none_if_na(banner.group(2))
        out["cuda_version"] = _none_if_na(banner.group(3))
    for line in (text or "").splitlines():
        cells = line.split("|")
        if len(cells) < 4:
            continue
        first = re.match(r"^\s*(\d+)\s+(.*?)\s+(?:On|Off)?\s*$", cells[1])
        second = cells[2].split()
        if first and second and _BUS_ID.match(second[0]):
            out["gpus"].append({"index": int(first.group(1)), "name": first.group(2), "bus_id": second[0]})
    return out


def parse_nvidia_smi_list(text):
    """``nvidia-smi -L``: ``GPU <n>: <name> (UUID: GPU-...)``; MIG lines below a GPU are skipped."""
    gpus = []
    for line in (text or "").splitlines():
        m = re.match(r"^GPU (\d+): (.+?) \(UUID: ([^)]+)\)\s*$", line)
        if m:
            gpus.append({"index": int(m.group(1)), "name": m.group(2), "uuid": m.group(3)})
    return {"gpus": gpus}


def parse_proc_driver_nvidia_version(text):
    """``/proc/driver/nvidia/version``; ``open`` is true for the open kernel modules.

    On Jetson (L4T) the number is the L4T release, not a desktop/datacenter driver version.
    """
    m = re.search(r"NVRM version:\s*(.*?Kernel Module)(?:\s+for\s+\S+)?\s+(\S+)", text or "")
    if not m:
        return {"driver_version": None, "open": None}
    return {"driver_version": m.group(2), "open": "Open Kernel Module" in m.group(1)}


# --------------------------------------------------------------------------------------------------- Ascend


def parse_npu_smi_info(text):
    """``npu-smi info``: banner version and one entry per chip (logical device).

    Every chip takes two rows: ``| <npu> <name> | <health> | ...`` then ``| <chip> [<phy-id>] | <bus-id> | ...``.
    An A2 NPU has one chip; an A3 (910C) NPU has two dies, each its own pair of rows, so 8 NPUs give 16 devices.
    The 26.x layout is wider but keeps the same cells. Reading stops at the process table.
    """
    out = {"version": None, "chips": [], "npu_count": 0}
    banner = re.search(r"npu-smi\s+(\S+)\s+Version:\s*(\S+)", text or "")
    if banner:
        out["version"] = banner.group(2)
    pending = None
    for line in (text or "").splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) < 4:
            continue
        if cells[1].startswith("NPU") and "Process" in cells[2]:
            break
        top = re.match(r"^(\d+)\s+(\S.*)$", cells[1])
        bottom = re.match(r"^(\d+)(?:\s+(\d+))?$", cells[1])
        if bottom and _BUS_ID.match(cells[2]) and pending is not None:
            pending.update(
                chip=int(bottom.group(1)),
                phy_id=int(bottom.group(2)) if bottom.group(2) else None,
                bus_id=cells[2],
            )
            out["chips"].append(pending)
            pending = None
        elif top and cells[2] and not _BUS_ID.match(cells[2]):
            pending = {"npu": int(top.group(1)), "name": top.group(2), "health": cells[2]}
    out["npu_count"] = len({chip["npu"] for chip in out["chips"]})
    return out


def parse_ascend_driver_version_info(text):
    """``<Ascend>/driver/version.info``: ``Version=`` is the driver package version."""
    kv = parse_key_value(text)
    return {"version": kv.get("Version") or kv.get("package_version"), "package_version": kv.get("package_version")}


def parse_ascend_firmware_version_info(text):
    """``<Ascend>/firmware/version.info``: ``Version=`` is the firmware version."""
    kv = parse_key_value(text)
    return {"version": kv.get("Version"), "package_version": kv.get("package_version")}


def parse_ascend_install_info(text):
    """``/etc/ascend_install.info``: where the driver and firmware were installed."""
    kv = parse_key_value(text)
    return {
        "driver_install_path": kv.get("Driver_Install_Path_Param"),
        "firmware_install_path": kv.get("Firmware_Install_Path_Param"),
        "user": kv.get("UserName"),
    }


def parse_ascend_toolkit_install_info(text):
    """``ascend-toolkit/latest/<arch>-linux/ascend_toolkit_install.info``: ``version=`` is the CANN version."""
    kv = parse_key_value(text)
    return {"cann_version": kv.get("version"), "inner_version": kv.get("innerversion"), "arch": kv.get("arch")}


def parse_ascend_toolkit_version_info(text):
    """``ascend-toolkit/latest/toolkit/version.info``: ``version_dir=`` is the CANN version, ``Version=`` internal."""
    kv = parse_key_value(text)
    return {"cann_version": kv.get("version_dir"), "inner_version": kv.get("Version")}


def parse_ascend_version_cfg(text):
    """``ascend-toolkit/latest/version.cfg``: ``toolkit_running_version=[<inner>:<cann>]``."""
    kv = parse_key_value(text)
    for key in ("toolkit_running_version", "toolkit_installed_version", "runtime_running_version"):
        m = re.match(r"^\[([^:\]]*):([^\]]+)\]", kv.get(key, ""))
        if m:
            return {"cann_version": m.group(2), "inner_version": m.group(1)}
    return {"cann_version": None, "inner_version": None}


# --------------------------------------------------------------------------------------------------- AMD


def parse_amd_smi_version(text):
    """``amd-smi version``: one ``key: value | key: value`` line.

    With a distro's in-tree amdgpu, ``amdgpu version`` holds the whitespace-stripped ``/proc/version``
    instead of a DKMS version: ``amdgpu_version`` is then None and ``inbox_kernel`` names the kernel.
    """
    fields = {}
    for part in (text or "").strip().split("|"):
        if ":" in part:
            key, value = part.split(":", 1)
            fields[key.strip()] = value.strip()
    amdgpu = fields.get("amdgpu version")
    inbox = re.match(r"^Linuxversion(\S+?)\(", amdgpu or "")
    return {
        "tool_version": fields.get("AMDSMI Tool"),
        "library_version": fields.get("AMDSMI Library version"),
        "rocm_version": _none_if_na(fields.get("ROCm version")),
        "amdgpu_version": amdgpu if amdgpu and _VERSION.match(amdgpu) else None,
        "inbox_kernel": inbox.group(1) if inbox else None,
    }


def parse_amd_smi_static(text):
    """``amd-smi static`` (default text form): per GPU, its sections as ``{SECTION: {KEY: value}}``."""
    gpus = []
    section = None
    for line in (text or "").splitlines():
        m = re.match(r"^GPU:\s*(\d+)\s*$", line)
        if m:
            gpus.append({"index": int(m.group(1)), "sections": {}})
            section = None
            continue
        if not gpus or not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        key, _unused, value = line.strip().partition(":")
        if indent <= 4 and not value.strip():
            section = gpus[-1]["sections"].setdefault(key, {})
        elif section is not None:
            section[key] = value.strip()
    for gpu in gpus:
        asic = gpu["sections"].get("ASIC", {})
        gpu["name"] = _none_if_na(asic.get("MARKET_NAME"))
        gpu["device_id"] = _none_if_na(asic.get("DEVICE_ID"))
        gpu["gfx"] = _none_if_na(asic.get("TARGET_GRAPHICS_VERSION"))
        gpu["bdf"] = _none_if_na(gpu["sections"].get("BUS", {}).get("BDF"))
        gpu["driver_version"] = _none_if_na(gpu["sections"].get("DRIVER", {}).get("VERSION"))
    return {"gpus": gpus}


def parse_rocm_smi_ids(text):
    """``rocm-smi -i``: ``GPU[n]\\t\\t: Device Name: \\t\\t<name>`` lines (secondary partitions show N/A ids)."""
    gpus = {}
    for line in (text or "").splitlines():
        m = re.match(r"^GPU\[(\d+)\]\s*:\s*([^:]+?):\s*(.*?)\s*$", line)
        if m:
            gpu = gpus.setdefault(int(m.group(1)), {"index": int(m.group(1)), "name": None, "device_id": None})
            if m.group(2) == "Device Name":
                gpu["name"] = _none_if_na(m.group(3))
            elif m.group(2) == "Device ID":
                gpu["device_id"] = _none_if_na(m.group(3))
    return {"gpus": [gpus[i] for i in sorted(gpus)]}


def parse_rocm_smi(text):
    """``rocm-smi`` concise table: one row per (logical) GPU, ``<device> <node> <DID>, <GUID> ...``."""
    gpus = []
    for line in (text or "").splitlines():
        m = re.match(r"^(\d+)\s+(\d+)\s+(0x[0-9A-Fa-f]+),\s+(\d+)\s", line)
        if m:
            gpus.append({"index": int(m.group(1)), "node": int(m.group(2)), "device_id": m.group(3)})
    return {"gpus": gpus}


def parse_amdgpu_module_version(text):
    """``/sys/module/amdgpu/version`` (DKMS driver only; the in-tree driver has no such file)."""
    value = (text or "").strip()
    return {"version": value if _VERSION.match(value) else None}


# --------------------------------------------------------------------------------------------------- RDMA


def _port_state(value):
    """``4: ACTIVE`` (sysfs) and ``PORT_ACTIVE (4)`` (ibv_devinfo) both become ``ACTIVE``."""
    value = (value or "").strip()
    m = re.match(r"^\d+:\s*(\S+)$", value) or re.match(r"^PORT_(\S+)(?:\s+\(\d+\))?$", value)
    return m.group(1) if m else _none_if_na(value)


def parse_ibv_devices(text):
    """``ibv_devices``: device names and node GUIDs below the ``device / node GUID`` header."""
    devices = []
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) == 2 and re.match(r"^[0-9a-fA-F]{16}$", parts[1]):
            devices.append({"name": parts[0], "node_guid": parts[1]})
    return {"devices": devices}


def parse_ibv_devinfo(text):
    """``ibv_devinfo`` (without ``-v``): per ``hca_id`` its attributes and ports (rate is not printed)."""
    devices = []
    port = None
    for line in (text or "").splitlines():
        key, _unused, value = line.strip().partition(":")
        value = value.strip()
        if key == "hca_id":
            devices.append({"name": value, "ports": []})
            port = None
        elif not devices or not value:
            continue
        elif key == "port":
            port = {"port": int(value), "state": None, "link_layer": None, "rate": None}
            devices[-1]["ports"].append(port)
        elif port is not None and key in ("state", "link_layer"):
            port[key] = _port_state(value) if key == "state" else value
        elif port is None:
            devices[-1][key] = value
    return {"devices": devices}


def parse_sys_infiniband_port(state, link_layer, rate):
    """The ``state``, ``link_layer`` and ``rate`` files of ``/sys/class/infiniband/<dev>/ports/<n>``."""
    return {"state": _port_state(state), "link_layer": _none_if_na(link_layer), "rate": _none_if_na(rate)}


# --------------------------------------------------------------------------------------------------- gather


def find_tool(name, extra_dirs, on_path, is_executable):
    """``extra_dirs`` first, then ``on_path(name)`` (PATH), then the tool's usual locations (:data:`TOOL_PATHS`)."""
    for folder in extra_dirs or []:
        candidate = folder.rstrip("/") + "/" + name
        if is_executable(candidate):
            return candidate
    found = on_path(name)
    if found:
        return found
    for candidate in TOOL_PATHS.get(name, []):
        if is_executable(candidate):
            return candidate
    return None


def empty_facts():
    return {
        "vendor": None,
        "device_count": 0,
        "device_models": [],
        "driver_version": None,
        "cuda_version": None,
        "rocm_version": None,
        "cann_version": None,
        "firmware_version": None,
        "rdma_devices": [],
        "tools": {},
        "sources": {},
    }


class _Probe:
    """Runs commands and reads files through the injected callables, remembering where each fact came from."""

    def __init__(self, run, read, exists, tools):
        self._run, self._read, self.exists, self.tools = run, read, exists, tools
        self.sources = {}

    def run(self, tool, *args):
        path = self.tools.get(tool)
        if not path:
            return None, None
        argv = [path, *args]
        rc, out, _err = self._run(argv)
        return (out if rc == 0 and out else None), "command: " + " ".join(argv)

    def read(self, path):
        text = self._read(path)
        return (text if text else None), "file: " + path

    def set(self, facts, key, value, source):
        if value not in (None, [], ""):
            facts[key] = value
            self.sources[key] = source


def _gather_nvidia(p, facts):
    out, src = p.run("nvidia-smi")
    parsed = parse_nvidia_smi(out)
    names = [gpu["name"] for gpu in parsed["gpus"]]
    p.set(facts, "device_models", names, src)
    p.set(facts, "driver_version", parsed["driver_version"], src)
    p.set(facts, "cuda_version", parsed["cuda_version"], src)
    if any(name.endswith("...") for name in names):
        listed, lsrc = p.run("nvidia-smi", "-L")
        full = [gpu["name"] for gpu in parse_nvidia_smi_list(listed)["gpus"]]
        if len(full) == len(names):
            p.set(facts, "device_models", full, lsrc)
    if not facts["driver_version"]:
        text, fsrc = p.read("/proc/driver/nvidia/version")
        p.set(facts, "driver_version", parse_proc_driver_nvidia_version(text)["driver_version"], fsrc)


def _gather_amd(p, facts):
    out, src = p.run("amd-smi", "version")
    version = parse_amd_smi_version(out)
    p.set(facts, "rocm_version", version["rocm_version"], src)
    out, ssrc = p.run("amd-smi", "static", "--asic")
    names = [gpu["name"] or gpu["device_id"] or "unknown" for gpu in parse_amd_smi_static(out)["gpus"]]
    p.set(facts, "device_models", names, ssrc)
    if not facts["device_models"]:
        out, isrc = p.run("rocm-smi", "-i")
        names = [gpu["name"] or gpu["device_id"] or "unknown" for gpu in parse_rocm_smi_ids(out)["gpus"]]
        p.set(facts, "device_models", names, isrc)
    text, fsrc = p.read("/sys/module/amdgpu/version")
    p.set(facts, "driver_version", parse_amdgpu_module_version(text)["version"], fsrc)
    if not facts["driver_version"]:
        p.set(facts, "driver_version", version["amdgpu_version"], src)


def _gather_ascend(p, facts):
    text, _unused = p.read("/etc/ascend_install.info")
    root = (parse_ascend_install_info(text)["driver_install_path"] or ASCEND_ROOT).rstrip("/")
    out, src = p.run("npu-smi", "info")
    parsed = parse_npu_smi_info(out)
    p.set(facts, "device_models", [chip["name"] for chip in parsed["chips"]], src)
    text, fsrc = p.read(root + "/driver/version.info")
    p.set(facts, "driver_version", parse_ascend_driver_version_info(text)["version"], fsrc)
    if not facts["driver_version"]:
        p.set(facts, "driver_version", parsed["version"], src)
    text, fsrc = p.read(root + "/firmware/version.info")
    p.set(facts, "firmware_version", parse_ascend_firmware_version_info(text)["version"], fsrc)
    toolkit = root + "/ascend-toolkit/latest"
    for path, parser in (
        (toolkit + "/aarch64-linux/ascend_toolkit_install.info", parse_ascend_toolkit_install_info),
        (toolkit + "/x86_64-linux/ascend_toolkit_install.info", parse_ascend_toolkit_install_info),
        (toolkit + "/toolkit/version.info", parse_ascend_toolkit_version_info),
        (toolkit + "/version.cfg", parse_ascend_version_cfg),
    ):
        text, fsrc = p.read(path)
        p.set(facts, "cann_version", parser(text)["cann_version"], fsrc)
        if facts["cann_version"]:
            break


def _gather_rdma(p, facts, listdir):
    devices = []
    for name in sorted(listdir(SYS_INFINIBAND) or [], key=_natural_key) if listdir else []:
        base = "%s/%s/ports" % (SYS_INFINIBAND, name)
        ports = []
        for port in sorted(listdir(base) or [], key=_natural_key):
            files = [p.read("%s/%s/%s" % (base, port, f))[0] for f in ("state", "link_layer", "rate")]
            if port.isdigit():
                ports.append({"port": int(port), **parse_sys_infiniband_port(*files)})
        devices.append({"name": name, "ports": ports})
    p.set(facts, "rdma_devices", devices, "file: " + SYS_INFINIBAND)
    if not facts["rdma_devices"]:
        out, src = p.run("ibv_devinfo")
        found = [{"name": d["name"], "ports": d["ports"]} for d in parse_ibv_devinfo(out)["devices"]]
        p.set(facts, "rdma_devices", found, src)
    if not facts["rdma_devices"]:
        out, src = p.run("ibv_devices")
        p.set(facts, "rdma_devices", [{"name": d["name"], "ports": []} for d in parse_ibv_devices(out)["devices"]], src)


_VENDORS = (
    ("nvidia", ("nvidia-smi",), "/proc/driver/nvidia/version", _gather_nvidia),
    ("amd", ("amd-smi", "rocm-smi"), "/sys/module/amdgpu/version", _gather_amd),
    ("ascend", ("npu-smi",), ASCEND_ROOT + "/driver/version.info", _gather_ascend),
)


def gather(run, read, exists, which, listdir=None):
    """Accelerator and RDMA facts of one host.

    ``run(argv) -> (rc, stdout, stderr)``; ``read(path) -> str or None``; ``exists(path) -> bool``;
    ``which(name) -> path or None`` (already searching the usual locations, see :func:`find_tool`);
    ``listdir(path) -> list or None`` lists ``/sys/class/infiniband``, without it RDMA comes from the ibv tools.
    Paths are the host's own (``/proc/...``); the caller maps them under another root if it wants to.

    A vendor is considered when its tool is found or its driver left its version file; the first one that
    shows devices wins (NVIDIA, AMD, Ascend), else the first one present, with ``device_count`` 0.
    """
    tools = {name: which(name) for name in TOOLS}
    present = [v for v in _VENDORS if any(tools[t] for t in v[1]) or exists(v[2])]
    chosen = None
    for vendor, _tools, _marker, collect in present:
        facts = empty_facts()
        probe = _Probe(run, read, exists, tools)
        collect(probe, facts)
        facts["vendor"], facts["sources"] = vendor, probe.sources
        if chosen is None or (facts["device_models"] and not chosen["device_models"]):
            chosen = facts
        if facts["device_models"]:
            break
    facts = chosen or empty_facts()
    probe = _Probe(run, read, exists, tools)
    _gather_rdma(probe, facts, listdir)
    facts["sources"].update(probe.sources)
    facts["device_count"] = len(facts["device_models"])
    facts["tools"] = tools
    return facts
