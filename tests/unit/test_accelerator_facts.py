"""Accelerator and RDMA facts (plugins/module_utils/accelerator.py, plugins/modules/accelerator_facts.py).

All tool outputs and files are real recorded outputs, copied byte for byte from ../shared/fixtures (see its
SOURCES.md for provenance) into tests/unit/fixtures/accelerator/, so the tests run from a clone alone.
Expected values were read off the fixture files by hand.
"""

from __future__ import annotations

import filecmp
import json
import os
import shutil
from pathlib import Path

import pytest

from ansible_collections.kimi_k3.serving.plugins.module_utils import accelerator

FIXTURES = Path(__file__).parent / "fixtures" / "accelerator"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "fixtures"
SYS_IB = FIXTURES / "rdma" / "sys-class-infiniband-h100"


def fixture(name):
    """A recorded output, by ``<vendor>/<file name>``."""
    return (FIXTURES / name).read_text(encoding="utf-8")


def test_local_fixtures_are_byte_copies_of_the_shared_ones():
    if not SHARED.is_dir():
        pytest.skip("%s is absent (a clone without ../shared): nothing to compare the local copies with" % SHARED)
    copies = sorted(p.relative_to(FIXTURES) for p in FIXTURES.rglob("*") if p.is_file())
    assert len(copies) > 90
    differ = [str(rel) for rel in copies if not filecmp.cmp(FIXTURES / rel, SHARED / rel, shallow=False)]
    assert differ == []


# --------------------------------------------------------------------------------------------------- NVIDIA


@pytest.mark.parametrize(
    ("name", "driver", "cuda", "count", "model", "last_bus_id"),
    [
        # pre-580 header separator `|---+`
        ("nvidia-smi_b200_8gpu_570.158.01.txt", "570.158.01", "12.9", 8, "NVIDIA B200", "00000000:DF:00.0"),
        ("nvidia-smi_b200_8gpu_575.57.08.txt", "575.57.08", "12.9", 8, "NVIDIA B200", "00000000:87:00.0"),
        ("nvidia-smi_h200_8gpu_570.172.08_oci.txt", "570.172.08", "12.8", 8, "NVIDIA H200", "00000000:D8:00.0"),
        # 580+ header separator `+---+`
        ("nvidia-smi_gb200_4gpu_580.126.09.txt", "580.126.09", "13.0", 4, "NVIDIA GB200", "00000019:01:00.0"),
        ("nvidia-smi_gb200_4gpu_590.48.01.txt", "590.48.01", "13.1", 4, "NVIDIA GB200", "00000019:01:00.0"),
        (
            "nvidia-smi_h100_1gpu-in-k8s-pod_580.105.08_eks-p5.txt",
            "580.105.08",
            "13.0",
            1,
            "NVIDIA H100 80GB HBM3",
            "00000000:86:00.0",
        ),
        # R610 banner: `KMD Version` / `CUDA UMD Version`
        (
            "nvidia-smi_b200_610.43.02_kmd-umd-format_partial.txt",
            "610.43.02",
            "13.3",
            2,
            "NVIDIA B200",
            "00000000:68:00.0",
        ),
        (
            "nvidia-smi_h100-vfio-passthrough-vm_610.43.02_kmd-umd-format.txt",
            "610.43.02",
            "13.3",
            1,
            "NVIDIA H100 80GB HBM3",
            "00000000:09:00.0",
        ),
    ],
)
def test_parse_nvidia_smi(name, driver, cuda, count, model, last_bus_id):
    parsed = accelerator.parse_nvidia_smi(fixture("nvidia/" + name))
    assert parsed["driver_version"] == driver
    assert parsed["smi_version"] == driver
    assert parsed["cuda_version"] == cuda
    assert [gpu["index"] for gpu in parsed["gpus"]] == list(range(count))
    assert [gpu["name"] for gpu in parsed["gpus"]] == [model] * count
    assert parsed["gpus"][-1]["bus_id"] == last_bus_id


def test_parse_nvidia_smi_processes_block_is_not_a_gpu():
    # The 580.126.09 capture ends in a Processes table; only the four GPU rows count.
    parsed = accelerator.parse_nvidia_smi(fixture("nvidia/nvidia-smi_gb200_4gpu_580.126.09.txt"))
    assert [gpu["bus_id"] for gpu in parsed["gpus"]] == [
        "00000008:01:00.0",
        "00000009:01:00.0",
        "00000018:01:00.0",
        "00000019:01:00.0",
    ]


def test_parse_nvidia_smi_list():
    gpus = accelerator.parse_nvidia_smi_list(fixture("nvidia/nvidia-smi-L_h100_8gpu.txt"))["gpus"]
    assert [gpu["name"] for gpu in gpus] == ["NVIDIA H100 80GB HBM3"] * 8
    assert gpus[0] == {"index": 0, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-e5f404f3-cc2a-cf0c-219f-dcf1a4e223f2"}
    assert gpus[7]["uuid"] == "GPU-f65a6ec2-ce6f-ba6c-d4c2-8ca414d6e709"


@pytest.mark.parametrize(
    ("name", "version"),
    [
        ("proc-driver-nvidia-version_open_x86_64_565.57.01.txt", "565.57.01"),
        ("proc-driver-nvidia-version_open_x86_64_525.60.11_trailing-space.txt", "525.60.11"),
        # Jetson: the number is the L4T release.
        ("proc-driver-nvidia-version_jetson_aarch64_35.3.1.txt", "35.3.1"),
    ],
)
def test_parse_proc_driver_nvidia_version(name, version):
    assert accelerator.parse_proc_driver_nvidia_version(fixture("nvidia/" + name)) == {
        "driver_version": version,
        "open": True,
    }


@pytest.mark.parametrize("text", ["", None, "NVIDIA-SMI has failed because it couldn't communicate with the driver"])
def test_parse_nvidia_nothing(text):
    assert accelerator.parse_nvidia_smi(text) == {
        "smi_version": None,
        "driver_version": None,
        "cuda_version": None,
        "gpus": [],
    }
    assert accelerator.parse_proc_driver_nvidia_version(text)["driver_version"] is None


# --------------------------------------------------------------------------------------------------- Ascend


@pytest.mark.parametrize(
    ("name", "version", "npus", "model", "first", "last"),
    [
        (
            "npu-smi-info_a2_8x910B3_24.1.0.3.txt",
            "24.1.0.3",
            8,
            ["910B3"] * 8,
            {"npu": 0, "name": "910B3", "health": "OK", "chip": 0, "phy_id": None, "bus_id": "0000:C1:00.0"},
            {"npu": 7, "name": "910B3", "health": "OK", "chip": 0, "phy_id": None, "bus_id": "0000:42:00.0"},
        ),
        # 26.x: 116 characters wide, process table with `Process id in container` and a running process.
        (
            "npu-smi-info_a2_8x910B3_26.1.0_wide.txt",
            "26.1.0",
            8,
            ["910B3"] * 8,
            {"npu": 0, "name": "910B3", "health": "OK", "chip": 0, "phy_id": None, "bus_id": "0000:C1:00.0"},
            {"npu": 7, "name": "910B3", "health": "OK", "chip": 0, "phy_id": None, "bus_id": "0000:42:00.0"},
        ),
        # A3: two die rows per NPU -> 16 devices on 8 NPUs.
        (
            "npu-smi-info_a3_8x2die_24.1.rc3.7.txt",
            "24.1.rc3.7",
            8,
            ["Ascend910"] * 16,
            {"npu": 0, "name": "Ascend910", "health": "OK", "chip": 0, "phy_id": 0, "bus_id": "0000:9D:00.0"},
            {"npu": 7, "name": "Ascend910", "health": "OK", "chip": 1, "phy_id": 15, "bus_id": "0000:83:00.0"},
        ),
        (
            "npu-smi-info_a3_8x2die_25.2.1.txt",
            "25.2.1",
            8,
            ["Ascend910"] * 16,
            {"npu": 0, "name": "Ascend910", "health": "OK", "chip": 0, "phy_id": 0, "bus_id": "0000:9D:00.0"},
            {"npu": 7, "name": "Ascend910", "health": "OK", "chip": 1, "phy_id": 15, "bus_id": "0000:83:00.0"},
        ),
        (
            "npu-smi-info_atlas800-9000_8x910A_24.1.0.txt",
            "24.1.0",
            8,
            ["910B"] * 8,
            {"npu": 0, "name": "910B", "health": "OK", "chip": 0, "phy_id": None, "bus_id": "0000:C1:00.0"},
            {"npu": 7, "name": "910B", "health": "OK", "chip": 0, "phy_id": None, "bus_id": "0000:02:00.0"},
        ),
    ],
)
def test_parse_npu_smi_info(name, version, npus, model, first, last):
    parsed = accelerator.parse_npu_smi_info(fixture("ascend/" + name))
    assert parsed["version"] == version
    assert parsed["npu_count"] == npus
    assert [chip["name"] for chip in parsed["chips"]] == model
    assert parsed["chips"][0] == first
    assert parsed["chips"][-1] == last


def test_parse_npu_smi_info_a3_die_order():
    chips = accelerator.parse_npu_smi_info(fixture("ascend/npu-smi-info_a3_8x2die_25.2.1.txt"))["chips"]
    assert [(c["npu"], c["chip"], c["phy_id"]) for c in chips] == [(n // 2, n % 2, n) for n in range(16)]


@pytest.mark.parametrize(
    ("parser", "name", "expected"),
    [
        (
            "parse_ascend_driver_version_info",
            "driver-version.info_atlas800I-A2_25.0.rc1.1.txt",
            {"version": "25.0.rc1.1", "package_version": "25.0.rc1.1"},
        ),
        (
            "parse_ascend_driver_version_info",
            "driver-version.info_atlas800I-A2_24.1.rc2.2.txt",
            {"version": "24.1.rc2.2", "package_version": "24.1.rc2.2"},
        ),
        (
            "parse_ascend_firmware_version_info",
            "firmware-version.info_atlas800I-A2_7.7.0.1.231.txt",
            {"version": "7.7.0.1.231", "package_version": "25.0.rc1.1"},
        ),
        (
            "parse_ascend_toolkit_install_info",
            "ascend_toolkit_install.info_a2_cann8.1.RC1.txt",
            {"cann_version": "8.1.RC1", "inner_version": "V100R001C21SPC001B238", "arch": "aarch64"},
        ),
        (
            "parse_ascend_toolkit_install_info",
            "ascend_toolkit_install.info_a3_cann8.2.RC1.txt",
            {"cann_version": "8.2.RC1", "inner_version": "V100R001C22SPC001B231", "arch": "aarch64"},
        ),
        (
            "parse_ascend_toolkit_install_info",
            "ascend_toolkit_install.info_a3_cann8.3.RC2.txt",
            {"cann_version": "8.3.RC2", "inner_version": "V100R001C23SPC002B210", "arch": "aarch64"},
        ),
        (
            "parse_ascend_toolkit_version_info",
            "ascend-toolkit-latest-toolkit-version.info_cann8.2.RC1.txt",
            {"cann_version": "8.2.RC1", "inner_version": "8.2.0.0.201"},
        ),
        (
            "parse_ascend_version_cfg",
            "ascend-toolkit-latest-version.cfg_cann8.0.T63.txt",
            {"cann_version": "8.0.T63", "inner_version": "7.6.T13.0.B094"},
        ),
        (
            "parse_ascend_install_info",
            "etc-ascend_install.info_atlas800-910A.txt",
            {
                "driver_install_path": "/usr/local/Ascend",
                "firmware_install_path": "/usr/local/Ascend",
                "user": "HwHiAiUser",
            },
        ),
    ],
)
def test_parse_ascend_files(parser, name, expected):
    assert getattr(accelerator, parser)(fixture("ascend/" + name)) == expected


def test_ascend_toolkit_parsers_do_not_take_each_others_files():
    # The driver's version.info has `Version=` too, but no CANN version in any of the toolkit formats.
    text = fixture("ascend/driver-version.info_atlas800I-A2_25.0.rc1.1.txt")
    assert accelerator.parse_ascend_toolkit_install_info(text)["cann_version"] is None
    assert accelerator.parse_ascend_toolkit_version_info(text)["cann_version"] is None
    assert accelerator.parse_ascend_version_cfg(text)["cann_version"] is None


# --------------------------------------------------------------------------------------------------- AMD


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "amd-smi-version_mi300x_rocm6.4.1.txt",
            {
                "tool_version": "25.4.2+aca1101",
                "library_version": "25.4.0",
                "rocm_version": "6.4.1",
                "amdgpu_version": "6.10.5",
                "inbox_kernel": None,
            },
        ),
        # In-tree amdgpu: the "amdgpu version" field holds the squashed /proc/version.
        (
            "amd-smi-version_mi300x_rocm6.4.0_inbox-kernel-driver.txt",
            {
                "tool_version": "25.3.0+ede62f2",
                "library_version": "25.3.0",
                "rocm_version": "6.4.0",
                "amdgpu_version": None,
                "inbox_kernel": "6.8.0-79-generic",
            },
        ),
    ],
)
def test_parse_amd_smi_version(name, expected):
    assert accelerator.parse_amd_smi_version(fixture("amd/" + name)) == expected


@pytest.mark.parametrize(
    ("name", "version"),
    [
        ("sys-module-amdgpu-version_mi300x-vf_6.12.12.txt", "6.12.12"),
        # The in-tree driver has no version file; the recorded text is cat's error message.
        ("sys-module-amdgpu-version_missing_inbox-driver.txt", None),
    ],
)
def test_parse_amdgpu_module_version(name, version):
    assert accelerator.parse_amdgpu_module_version(fixture("amd/" + name)) == {"version": version}


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "amd-smi-static_mi350x_gpu0_partial.txt",
            ("AMD Instinct MI350X", "0x75a0", "gfx950", "0000:05:00.0", "6.18.3"),
        ),
        (
            "amd-smi-static-g0_mi325x-vf_partial.txt",
            ("AMD Instinct Mi325X VF", "0x74b9", "gfx942", "0000:83:00.0", None),
        ),
    ],
)
def test_parse_amd_smi_static(name, expected):
    gpus = accelerator.parse_amd_smi_static(fixture("amd/" + name))["gpus"]
    assert [(g["index"], g["name"], g["device_id"], g["gfx"], g["bdf"], g["driver_version"]) for g in gpus] == [
        (0, *expected)
    ]


def test_parse_rocm_smi_ids_partitioned():
    gpus = accelerator.parse_rocm_smi_ids(fixture("amd/rocm-smi-i_mi300x_partitioned_rocm6.4.1_partial.txt"))["gpus"]
    assert [g["name"] for g in gpus] == ["AMD Instinct MI300X"] * 6
    # Secondary partitions print N/A as their device id.
    assert [g["device_id"] for g in gpus] == ["0x74a1", None] * 3


@pytest.mark.parametrize(
    ("name", "did"),
    [("rocm-smi_mi300x_8gpu_rocm6.4.2.txt", "0x74a1"), ("rocm-smi_mi350x_dpx-partitioned_partial.txt", "0x75a0")],
)
def test_parse_rocm_smi_concise(name, did):
    gpus = accelerator.parse_rocm_smi(fixture("amd/" + name))["gpus"]
    assert [(g["index"], g["node"], g["device_id"]) for g in gpus] == [(i, i + 2, did) for i in range(8)]


# --------------------------------------------------------------------------------------------------- RDMA


def test_parse_ibv_devices():
    devices = accelerator.parse_ibv_devices(fixture("rdma/ibv_devices_h100-node_7hca.txt"))["devices"]
    assert [d["name"] for d in devices] == ["mlx5_%d" % i for i in range(7)]
    assert devices[0]["node_guid"] == "e8ebd30300cd32b0"
    assert devices[6]["node_guid"] == "58a2e1030029bad0"


def test_parse_ibv_devinfo():
    devices = accelerator.parse_ibv_devinfo(fixture("rdma/ibv_devinfo_h100_cx7-ib_8hca_partial.txt"))["devices"]
    names = ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"]
    assert [d["name"] for d in devices] == names
    for device in devices:
        assert device["ports"] == [{"port": 1, "state": "ACTIVE", "link_layer": "InfiniBand", "rate": None}]
        assert (device["fw_ver"], device["vendor_part_id"], device["board_id"]) == (
            "28.41.1000",
            "4129",
            "DEL0000000036",
        )


def test_parse_ibv_devinfo_cut_before_the_ports():
    devices = accelerator.parse_ibv_devinfo(fixture("rdma/ibv_devinfo-head_h100-node_cx6.txt"))["devices"]
    assert [(d["name"], d["fw_ver"], d["vendor_part_id"], d["ports"]) for d in devices] == [
        ("mlx5_0", "20.41.1000", "4123", [])
    ]


@pytest.mark.parametrize(
    ("device", "expected"),
    [
        ("mlx5_0", {"state": "ACTIVE", "link_layer": "InfiniBand", "rate": "400 Gb/sec (4X NDR)"}),
        ("mlx5_bond_0", {"state": "ACTIVE", "link_layer": "Ethernet", "rate": "200 Gb/sec (2X NDR)"}),
    ],
)
def test_parse_sys_infiniband_port(device, expected):
    port = SYS_IB / device / "ports" / "1"
    files = [(port / f).read_text() for f in ("state", "link_layer", "rate")]
    assert accelerator.parse_sys_infiniband_port(*files) == expected


# --------------------------------------------------------------------------------------------------- find_tool


@pytest.mark.parametrize(
    ("extra", "on_path", "executables", "expected"),
    [
        # tools_path first, even when the tool is on PATH too
        (["/opt/a/", "/opt/b"], "/usr/bin/npu-smi", {"/opt/b/npu-smi", "/usr/bin/npu-smi"}, "/opt/b/npu-smi"),
        ([], "/usr/bin/npu-smi", {"/usr/local/sbin/npu-smi"}, "/usr/bin/npu-smi"),
        # not on PATH: the usual locations, in order
        ([], None, {"/usr/local/sbin/npu-smi"}, "/usr/local/sbin/npu-smi"),
        ([], None, {"/usr/local/bin/npu-smi", "/usr/local/sbin/npu-smi"}, "/usr/local/bin/npu-smi"),
        (["/opt/a"], None, set(), None),
    ],
)
def test_find_tool(extra, on_path, executables, expected):
    found = accelerator.find_tool("npu-smi", extra, lambda name: on_path, executables.__contains__)
    assert found == expected


# --------------------------------------------------------------------------------------------------- gather


class FakeHost:
    """run/read/exists/which/listdir doubles answering with recorded outputs; remembers every argv run."""

    def __init__(self, tools=None, commands=None, files=None, sys_ib=False):
        self.tools = tools or {}
        self.commands = {tuple(argv): out for argv, out in (commands or {}).items()}
        self.files = dict(files or {})
        if sys_ib:
            for path in SYS_IB.rglob("*"):
                if path.is_file():
                    self.files["/sys/class/infiniband/" + path.relative_to(SYS_IB).as_posix()] = path.read_text()
        self.ran = []

    def run(self, argv):
        self.ran.append(list(argv))
        out = self.commands.get(tuple(argv))
        if out is None:
            return 127, "", "not recorded: %s" % argv
        if isinstance(out, tuple):
            return out
        return 0, out, ""

    def read(self, path):
        return self.files.get(path)

    def exists(self, path):
        return path in self.files or any(p.startswith(path.rstrip("/") + "/") for p in self.files)

    def which(self, name):
        return self.tools.get(name)

    def listdir(self, path):
        prefix = path.rstrip("/") + "/"
        names = {p[len(prefix) :].split("/")[0] for p in self.files if p.startswith(prefix)}
        return sorted(names) or None

    def gather(self):
        return accelerator.gather(self.run, self.read, self.exists, self.which, listdir=self.listdir)


ALL_TOOLS_NONE = dict.fromkeys(accelerator.TOOLS)

SYS_IB_DEVICES = [
    {"name": name, "ports": [{"port": 1, "state": "ACTIVE", "link_layer": "InfiniBand", "rate": "400 Gb/sec (4X NDR)"}]}
    for name in ("mlx5_0", "mlx5_1", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9")
] + [
    {
        "name": "mlx5_bond_0",
        "ports": [{"port": 1, "state": "ACTIVE", "link_layer": "Ethernet", "rate": "200 Gb/sec (2X NDR)"}],
    }
]


def test_gather_nvidia_gb200_580_with_sys_rdma():
    host = FakeHost(
        tools={"nvidia-smi": "/usr/bin/nvidia-smi"},
        commands={("/usr/bin/nvidia-smi",): fixture("nvidia/nvidia-smi_gb200_4gpu_580.126.09.txt")},
        sys_ib=True,
    )
    facts = host.gather()
    assert host.ran == [["/usr/bin/nvidia-smi"]]
    assert facts == {
        "vendor": "nvidia",
        "device_count": 4,
        "device_models": ["NVIDIA GB200"] * 4,
        "driver_version": "580.126.09",
        "cuda_version": "13.0",
        "rocm_version": None,
        "cann_version": None,
        "firmware_version": None,
        "rdma_devices": SYS_IB_DEVICES,
        "tools": {**ALL_TOOLS_NONE, "nvidia-smi": "/usr/bin/nvidia-smi"},
        "sources": {
            "device_models": "command: /usr/bin/nvidia-smi",
            "driver_version": "command: /usr/bin/nvidia-smi",
            "cuda_version": "command: /usr/bin/nvidia-smi",
            "rdma_devices": "file: /sys/class/infiniband",
        },
    }


@pytest.mark.parametrize(
    ("name", "count", "model", "driver", "cuda"),
    [
        ("nvidia-smi_b200_8gpu_575.57.08.txt", 8, "NVIDIA B200", "575.57.08", "12.9"),
        ("nvidia-smi_gb200_4gpu_590.48.01.txt", 4, "NVIDIA GB200", "590.48.01", "13.1"),
        (
            "nvidia-smi_h100-vfio-passthrough-vm_610.43.02_kmd-umd-format.txt",
            1,
            "NVIDIA H100 80GB HBM3",
            "610.43.02",
            "13.3",
        ),
    ],
)
def test_gather_nvidia_driver_versions(name, count, model, driver, cuda):
    host = FakeHost(
        tools={"nvidia-smi": "/usr/local/nvidia/bin/nvidia-smi"},
        commands={("/usr/local/nvidia/bin/nvidia-smi",): fixture("nvidia/" + name)},
    )
    facts = host.gather()
    assert host.ran == [["/usr/local/nvidia/bin/nvidia-smi"]]
    assert (facts["vendor"], facts["device_count"], facts["device_models"]) == ("nvidia", count, [model] * count)
    assert (facts["driver_version"], facts["cuda_version"]) == (driver, cuda)
    assert facts["rdma_devices"] == []


def test_gather_nvidia_smi_failing_falls_back_to_proc_version():
    host = FakeHost(
        tools={"nvidia-smi": "/usr/bin/nvidia-smi"},
        commands={("/usr/bin/nvidia-smi",): (9, "NVIDIA-SMI has failed because it couldn't communicate", "")},
        files={"/proc/driver/nvidia/version": fixture("nvidia/proc-driver-nvidia-version_open_x86_64_565.57.01.txt")},
    )
    facts = host.gather()
    assert host.ran == [["/usr/bin/nvidia-smi"]]
    assert (facts["vendor"], facts["device_count"], facts["device_models"]) == ("nvidia", 0, [])
    assert facts["driver_version"] == "565.57.01"
    assert facts["cuda_version"] is None
    assert facts["sources"] == {"driver_version": "file: /proc/driver/nvidia/version"}


def test_gather_ascend_a3_16_dies():
    host = FakeHost(
        tools={"npu-smi": "/usr/local/sbin/npu-smi", "hccn_tool": "/usr/local/Ascend/driver/tools/hccn_tool"},
        commands={("/usr/local/sbin/npu-smi", "info"): fixture("ascend/npu-smi-info_a3_8x2die_25.2.1.txt")},
        files={
            "/etc/ascend_install.info": fixture("ascend/etc-ascend_install.info_atlas800-910A.txt"),
            "/usr/local/Ascend/driver/version.info": fixture("ascend/driver-version.info_atlas800I-A2_25.0.rc1.1.txt"),
            "/usr/local/Ascend/firmware/version.info": fixture(
                "ascend/firmware-version.info_atlas800I-A2_7.7.0.1.231.txt"
            ),
            "/usr/local/Ascend/ascend-toolkit/latest/aarch64-linux/ascend_toolkit_install.info": fixture(
                "ascend/ascend_toolkit_install.info_a3_cann8.3.RC2.txt"
            ),
        },
    )
    facts = host.gather()
    assert host.ran == [["/usr/local/sbin/npu-smi", "info"]]
    assert facts == {
        "vendor": "ascend",
        "device_count": 16,
        "device_models": ["Ascend910"] * 16,
        "driver_version": "25.0.rc1.1",
        "cuda_version": None,
        "rocm_version": None,
        "cann_version": "8.3.RC2",
        "firmware_version": "7.7.0.1.231",
        "rdma_devices": [],
        "tools": {
            **ALL_TOOLS_NONE,
            "npu-smi": "/usr/local/sbin/npu-smi",
            "hccn_tool": "/usr/local/Ascend/driver/tools/hccn_tool",
        },
        "sources": {
            "device_models": "command: /usr/local/sbin/npu-smi info",
            "driver_version": "file: /usr/local/Ascend/driver/version.info",
            "firmware_version": "file: /usr/local/Ascend/firmware/version.info",
            "cann_version": "file: /usr/local/Ascend/ascend-toolkit/latest/aarch64-linux/ascend_toolkit_install.info",
        },
    }


def test_gather_ascend_a2_wide_without_driver_files():
    # No driver version.info: the driver version is npu-smi's banner; CANN from the toolkit's version.cfg.
    host = FakeHost(
        tools={"npu-smi": "/usr/local/bin/npu-smi"},
        commands={("/usr/local/bin/npu-smi", "info"): fixture("ascend/npu-smi-info_a2_8x910B3_26.1.0_wide.txt")},
        files={
            "/usr/local/Ascend/ascend-toolkit/latest/version.cfg": fixture(
                "ascend/ascend-toolkit-latest-version.cfg_cann8.0.T63.txt"
            )
        },
    )
    facts = host.gather()
    assert host.ran == [["/usr/local/bin/npu-smi", "info"]]
    assert (facts["vendor"], facts["device_count"], facts["device_models"]) == ("ascend", 8, ["910B3"] * 8)
    assert (facts["driver_version"], facts["cann_version"], facts["firmware_version"]) == ("26.1.0", "8.0.T63", None)
    assert facts["sources"]["driver_version"] == "command: /usr/local/bin/npu-smi info"
    assert facts["sources"]["cann_version"] == "file: /usr/local/Ascend/ascend-toolkit/latest/version.cfg"


def test_gather_ascend_driver_only_no_npu_smi():
    host = FakeHost(
        files={
            "/usr/local/Ascend/driver/version.info": fixture("ascend/driver-version.info_atlas800I-A2_24.1.rc2.2.txt"),
            "/usr/local/Ascend/ascend-toolkit/latest/toolkit/version.info": fixture(
                "ascend/ascend-toolkit-latest-toolkit-version.info_cann8.2.RC1.txt"
            ),
        }
    )
    facts = host.gather()
    assert host.ran == []
    assert (facts["vendor"], facts["device_count"], facts["driver_version"]) == ("ascend", 0, "24.1.rc2.2")
    assert facts["cann_version"] == "8.2.RC1"


def test_gather_amd_dkms():
    smi = "/opt/rocm/bin/amd-smi"
    host = FakeHost(
        tools={"amd-smi": smi, "rocm-smi": "/opt/rocm/bin/rocm-smi"},
        commands={
            (smi, "version"): fixture("amd/amd-smi-version_mi300x_rocm6.4.1.txt"),
            (smi, "static", "--asic"): fixture("amd/amd-smi-static_mi350x_gpu0_partial.txt"),
        },
        files={"/sys/module/amdgpu/version": fixture("amd/sys-module-amdgpu-version_mi300x-vf_6.12.12.txt")},
    )
    facts = host.gather()
    assert host.ran == [[smi, "version"], [smi, "static", "--asic"]]
    assert (facts["vendor"], facts["device_count"], facts["device_models"]) == ("amd", 1, ["AMD Instinct MI350X"])
    assert (facts["rocm_version"], facts["driver_version"]) == ("6.4.1", "6.12.12")
    assert facts["sources"] == {
        "rocm_version": "command: /opt/rocm/bin/amd-smi version",
        "device_models": "command: /opt/rocm/bin/amd-smi static --asic",
        "driver_version": "file: /sys/module/amdgpu/version",
    }


def test_gather_amd_inbox_driver_and_rocm_smi_fallback():
    # In-tree amdgpu: no /sys/module/amdgpu/version and amd-smi's "amdgpu version" is the kernel banner,
    # so the driver version stays unknown. amd-smi static fails here, so the models come from rocm-smi -i.
    smi = "/opt/rocm/bin/amd-smi"
    host = FakeHost(
        tools={"amd-smi": smi, "rocm-smi": "/opt/rocm/bin/rocm-smi"},
        commands={
            (smi, "version"): fixture("amd/amd-smi-version_mi300x_rocm6.4.0_inbox-kernel-driver.txt"),
            (smi, "static", "--asic"): (1, "", "error"),
            ("/opt/rocm/bin/rocm-smi", "-i"): fixture("amd/rocm-smi-i_mi300x_partitioned_rocm6.4.1_partial.txt"),
        },
    )
    facts = host.gather()
    assert host.ran == [[smi, "version"], [smi, "static", "--asic"], ["/opt/rocm/bin/rocm-smi", "-i"]]
    assert (facts["vendor"], facts["device_count"]) == ("amd", 6)
    assert facts["device_models"] == ["AMD Instinct MI300X"] * 6
    assert (facts["rocm_version"], facts["driver_version"]) == ("6.4.0", None)
    assert "driver_version" not in facts["sources"]


def test_gather_rdma_from_ibv_devinfo_then_ibv_devices():
    devinfo = FakeHost(
        tools={"ibv_devinfo": "/usr/bin/ibv_devinfo", "ibv_devices": "/usr/bin/ibv_devices"},
        commands={("/usr/bin/ibv_devinfo",): fixture("rdma/ibv_devinfo_h100_cx7-ib_8hca_partial.txt")},
    )
    facts = devinfo.gather()
    assert devinfo.ran == [["/usr/bin/ibv_devinfo"]]
    assert facts["vendor"] is None
    assert [d["name"] for d in facts["rdma_devices"]] == [
        "mlx5_0",
        "mlx5_3",
        "mlx5_4",
        "mlx5_5",
        "mlx5_6",
        "mlx5_9",
        "mlx5_10",
        "mlx5_11",
    ]
    assert facts["rdma_devices"][0] == {
        "name": "mlx5_0",
        "ports": [{"port": 1, "state": "ACTIVE", "link_layer": "InfiniBand", "rate": None}],
    }
    assert facts["sources"] == {"rdma_devices": "command: /usr/bin/ibv_devinfo"}

    devices = FakeHost(
        tools={"ibv_devices": "/usr/bin/ibv_devices"},
        commands={("/usr/bin/ibv_devices",): fixture("rdma/ibv_devices_h100-node_7hca.txt")},
    )
    facts = devices.gather()
    assert devices.ran == [["/usr/bin/ibv_devices"]]
    assert facts["rdma_devices"] == [{"name": "mlx5_%d" % i, "ports": []} for i in range(7)]
    assert facts["sources"] == {"rdma_devices": "command: /usr/bin/ibv_devices"}


def test_gather_nothing_found():
    host = FakeHost()
    assert host.gather() == {**accelerator.empty_facts(), "tools": ALL_TOOLS_NONE}
    assert host.ran == []
    assert accelerator.empty_facts()["vendor"] is None
    assert accelerator.empty_facts()["device_count"] == 0


# --------------------------------------------------------------------------------------------------- module


def test_module_with_fixture_tools_and_sys_root(tmp_path, monkeypatch, capsys):
    """The module end to end. Its tools are test doubles: shell scripts that print recorded real outputs."""
    from ansible.module_utils import basic

    from ansible_collections.kimi_k3.serving.plugins.modules import accelerator_facts

    tools = tmp_path / "tools"
    tools.mkdir()
    npu_smi = tools / "npu-smi"
    npu_smi.write_text(
        '#!/bin/sh\nPATH=/usr/bin:/bin\n[ "$*" = "info" ] || { echo "unexpected argv: $*" >&2; exit 2; }\ncat "%s"\n'
        % (FIXTURES / "ascend" / "npu-smi-info_a2_8x910B3_24.1.0.3.txt")
    )
    npu_smi.chmod(0o755)
    root = tmp_path / "root"
    ascend = root / "usr" / "local" / "Ascend"
    for rel, name in (
        ("driver/version.info", "driver-version.info_atlas800I-A2_25.0.rc1.1.txt"),
        (
            "ascend-toolkit/latest/aarch64-linux/ascend_toolkit_install.info",
            "ascend_toolkit_install.info_a2_cann8.1.RC1.txt",
        ),
    ):
        (ascend / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(FIXTURES / "ascend" / name, ascend / rel)
    shutil.copytree(SYS_IB, root / "sys" / "class" / "infiniband")

    # Nothing from the machine running the tests: an empty PATH and no usual tool locations.
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setattr(accelerator, "TOOL_PATHS", {})
    args = {"ANSIBLE_MODULE_ARGS": {"tools_path": [str(tools)], "sys_root": str(root), "_ansible_check_mode": True}}
    monkeypatch.setattr(basic, "_ANSIBLE_ARGS", json.dumps(args).encode())
    monkeypatch.setattr(basic, "_ANSIBLE_PROFILE", "legacy")

    with pytest.raises(SystemExit) as exited:
        accelerator_facts.main()
    result = json.loads(capsys.readouterr().out)
    assert exited.value.code == 0, result
    assert result["changed"] is False
    facts = result["ansible_facts"]["k3_accelerator"]
    assert facts["vendor"] == "ascend"
    assert facts["device_count"] == 8
    assert facts["device_models"] == ["910B3"] * 8
    assert (facts["driver_version"], facts["cann_version"], facts["firmware_version"]) == (
        "25.0.rc1.1",
        "8.1.RC1",
        None,
    )
    assert facts["rdma_devices"] == SYS_IB_DEVICES
    assert facts["tools"] == {**ALL_TOOLS_NONE, "npu-smi": str(npu_smi)}
    assert facts["sources"]["device_models"] == "command: %s info" % npu_smi
    assert os.access(npu_smi, os.X_OK)
