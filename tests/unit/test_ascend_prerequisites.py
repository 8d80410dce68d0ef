"""What the ascend role decides for a host (plugins/plugin_utils/platforms/_ascend.py).

Facts come from the real parser over recorded real outputs (tests/unit/fixtures/accelerator/ascend):
npu-smi info of an A3 (8 NPUs x 2 dies, 25.2.1) and an A2 (8 x 910B3), driver/firmware version.info,
the CANN toolkit's install info; hccn_tool's -ip -g output of a 910B1 node.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.kimi_k3.serving.plugins.module_utils import accelerator
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.platforms._ascend import (
    ascend_prerequisites,
    ascend_version_key,
    duplicate_hccn_addresses,
    hccn_addresses,
    parse_hccn_ip,
)

FIXTURES = Path(__file__).parent / "fixtures" / "accelerator" / "ascend"
HCCN_IP = FIXTURES / "hccn_tool_-i3_-ip_-g_910B1.txt"
A3 = {
    "devices_per_node": 16,
    "host_os": "ubuntu",
    "images": {
        "ubuntu": "quay.io/ascend/vllm-ascend:kimi-k3-a3",
        "openeuler": "quay.io/ascend/vllm-ascend:kimi-k3-a3-openeuler",
    },
}
TOOLKIT_INFO = "/usr/local/Ascend/ascend-toolkit/latest/aarch64-linux/ascend_toolkit_install.info"
DOCKER = [{"kind": "vllm", "runtime": "docker"}]
HOST = [{"kind": "vllm", "runtime": "host"}]


def facts_from(npu_smi, files=()):
    texts = {path: (FIXTURES / name).read_text() for path, name in dict(files).items()}
    return accelerator.gather(
        run=lambda argv: (0, (FIXTURES / npu_smi).read_text(), "") if argv[1:] == ["info"] else (1, "", ""),
        read=texts.get,
        exists=lambda path: path in texts,
        which=lambda name: "/usr/local/bin/npu-smi" if name == "npu-smi" else None,
    )


def a3_facts():
    return facts_from(
        "npu-smi-info_a3_8x2die_25.2.1.txt",
        {
            "/usr/local/Ascend/driver/version.info": "driver-version.info_atlas800I-A2_25.0.rc1.1.txt",
            "/usr/local/Ascend/firmware/version.info": "firmware-version.info_atlas800I-A2_7.7.0.1.231.txt",
            TOOLKIT_INFO: "ascend_toolkit_install.info_a3_cann8.3.RC2.txt",
        },
    )


def hccn(count=16, base="29.1.112."):
    return {dev: base + str(10 + dev) for dev in range(count)}


@pytest.mark.parametrize(
    "low, high",
    [
        ("24.1.rc2.2", "24.1.0"),
        ("24.1.0", "25.2.1"),
        ("8.2.RC1", "8.2.0"),
        ("8.2.RC1", "8.3.RC2"),
        ("8.0.T63", "8.0.0"),
        ("25.0.rc1.1", "25.0.rc2"),
    ],
)
def test_ascend_version_order(low, high):
    assert ascend_version_key(low) < ascend_version_key(high)


def test_parse_the_recorded_hccn_ip_output():
    assert parse_hccn_ip(HCCN_IP.read_text()) == {"ipaddr": "29.1.112.213", "netmask": "255.255.0.0"}
    assert hccn_addresses({3: HCCN_IP.read_text(), 4: ""}) == {3: "29.1.112.213", 4: None}


def test_an_a3_node_that_fits_passes():
    need = ascend_prerequisites(
        a3_facts(),
        DOCKER,
        A3,
        "a3-n0",
        "Ubuntu",
        {"/dev/davinci0": True},
        hccn=hccn(),
        table={"min_driver": "25.0.rc1", "min_firmware": "7.7.0.1", "min_cann": "9.0.0"},
    )
    assert need == {"problems": [], "host_runtime": False}  # CANN is in the image: not checked


def test_device_count_must_match_the_profile():
    [problem] = ascend_prerequisites(a3_facts(), DOCKER, dict(A3, devices_per_node=8), "n", "Ubuntu")["problems"]
    assert problem.startswith("n: npu-smi lists 16 NPU devices, the profile runs 8 per node (Atlas 800 A2: 8 NPUs)")
    a2 = facts_from("npu-smi-info_a2_8x910B3_24.1.0.3.txt")
    [problem] = ascend_prerequisites(a2, DOCKER, A3, "n", "Ubuntu")["problems"]
    assert "lists 8 NPU devices, the profile runs 16 per node (Atlas 800 A3: 16 dies)" in problem


def test_old_driver_firmware_and_host_cann_are_refused():
    table = {"min_driver": "25.2.0", "min_firmware": "7.8.0", "min_cann": "8.5.0"}
    problems = ascend_prerequisites(a3_facts(), HOST, A3, "n", "Ubuntu", table=table)["problems"]
    assert problems == [
        "n: Ascend driver 25.0.rc1.1 is installed; 25.2.0 or newer is required. Fix: upgrade the driver.",
        "n: Ascend firmware 7.7.0.1.231 is installed; 7.8.0 or newer is required. Fix: upgrade the firmware.",
        "n: Ascend CANN toolkit 8.3.RC2 is installed; 8.5.0 or newer is required. Fix: upgrade the CANN toolkit.",
    ]


def test_the_image_must_match_the_host_os():
    [problem] = ascend_prerequisites(a3_facts(), DOCKER, A3, "n", "openEuler")["problems"]
    assert problem == (
        "n: the host runs openEuler but the plan uses the ubuntu image quay.io/ascend/vllm-ascend:kimi-k3-a3. "
        "Fix: set k3_host_os: openeuler (image quay.io/ascend/vllm-ascend:kimi-k3-a3-openeuler)."
    )


def test_missing_devices_and_mounts_are_named():
    paths = {"/dev/davinci15": {"exists": False}, "/usr/local/dcmi": {"exists": True}, "/dev/hisi_hdc": False}
    problems = ascend_prerequisites(a3_facts(), DOCKER, A3, "n", "Ubuntu", paths)["problems"]
    assert [p.split(" is missing")[0] for p in problems] == ["n: /dev/davinci15", "n: /dev/hisi_hdc"]


def test_npus_without_an_address_and_addresses_used_twice():
    partial = {**hccn(), 5: None}
    del partial[15]
    [problem] = ascend_prerequisites(a3_facts(), DOCKER, A3, "n", "Ubuntu", hccn=partial)["problems"]
    assert problem.startswith("n: NPU device(s) 5, 15 have no network address (hccn_tool -i N -ip -g)")
    twice = duplicate_hccn_addresses({"a3-n0": hccn(2), "a3-n1": {0: "29.1.112.11", 1: "29.1.112.99"}})
    assert twice == [
        "a3-n0: NPU network address 29.1.112.11 is used by a3-n0 device 1 and a3-n1 device 0. "
        "Fix: give every NPU its own address (hccn_tool -i N -ip -s)."
    ]


def test_no_ascend_npu():
    [problem] = ascend_prerequisites({}, DOCKER, A3, "n", "Ubuntu")["problems"]
    assert problem.startswith("n: no Ascend NPU found")
