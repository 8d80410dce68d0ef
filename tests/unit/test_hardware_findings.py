"""The hardware findings of a support bundle: which tools each host runs, which kernel lines are kept,
and the module's parts that run them (with a stand-in for AnsibleModule's command runner)."""

from __future__ import annotations

import re
import subprocess

import pytest
from conftest import EXAMPLES, example_names, inventory_input

from ansible_collections.kimi_k3.serving.plugins.modules import support_bundle
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability import _hardware_findings as findings
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _planner as planner

# Kernel lines in the formats the vendors document (NVIDIA's Xid catalogue, the mlx5 driver's
# command failures, amdgpu's RAS reports), and ordinary start-up lines that must not be kept.
KEPT = (
    "NVRM: Xid (PCI:0000:3b:00): 79, pid=2417, GPU has fallen off the bus.",
    "NVRM: Xid (PCI:0000:3b:00): 48, pid=2417, An uncorrectable double bit error (DBE) has been detected.",
    "mlx5_core 0000:5e:00.0: mlx5_cmd_out_err:838:(pid 1): CREATE_MKEY(0x200) op_mod(0x0) failed, status bad",
    "amdgpu 0000:05:00.0: amdgpu: 1 uncorrectable hardware errors detected in umc block",
    "EDAC MC0: 1 CE memory read error on CPU_SrcID#0_Ha#0_Chan#0_DIMM#0",
)
IGNORED = (
    "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  570.158.01",
    "mlx5_core 0000:5e:00.0: firmware version: 28.39.1002",
    "amdgpu 0000:05:00.0: amdgpu: SMU is initialized successfully!",
)


def plan_of(name):
    return planner.build_plan(inventory_input(str(EXAMPLES / name / "hosts.yml")))


@pytest.mark.parametrize("name", example_names())
def test_every_engine_host_runs_its_platforms_tools_and_other_hosts_none(name):
    plan = plan_of(name)
    tool = {"blackwell": "nvidia-smi", "rocm": "amd-smi", "ascend": "npu-smi"}[plan["platform"]]
    devices = plan["parameters"]["devices_per_node"]
    for host, entry in plan["hosts"].items():
        found = findings.bundle_hardware(plan, host)
        programs = [c["argv"][0] for c in found["commands"]]
        assert found["kernel_patterns"] and "/usr/local/Ascend/driver/tools" in found["tool_dirs"]
        if any(s["kind"] == "vllm" for s in entry["services"]):
            assert programs[0] == tool and programs[-1] == "ibv_devinfo", (host, programs)
            if plan["platform"] == "ascend":
                # link, network health, address and route of every device NIC
                assert programs.count("hccn_tool") == 4 * devices
                assert {
                    "name": "hccn-%d-link" % (devices - 1),
                    "argv": ["hccn_tool", "-i", str(devices - 1), "-link", "-g"],
                } in found["commands"]
        else:
            assert programs == [], (host, programs)


def test_the_patterns_keep_the_hardware_lines_and_not_the_start_up_lines():
    plan = {"platform": "blackwell", "hosts": {}}
    patterns = findings.bundle_hardware(plan, "h")["kernel_patterns"]
    patterns += findings.KERNEL_PATTERNS["rocm"]
    wanted = re.compile("|".join("(?:%s)" % p for p in patterns))
    assert [line for line in KEPT if not wanted.search(line)] == []
    assert [line for line in IGNORED if wanted.search(line)] == []


class Runner:
    """AnsibleModule's run_command and get_bin_path, answering from a table (a unit-test stand-in)."""

    def __init__(self, answers, programs):
        self.answers, self.programs, self.ran = answers, programs, []

    def run_command(self, argv, check_rc=False):
        self.ran.append(argv[0])
        return self.answers[argv[0]]

    def get_bin_path(self, name, opt_dirs=None):
        return self.programs.get(name)


class Commands(Runner):
    """run_command runs the command for real (coreutils' timeout and the stand-in tool)."""

    def run_command(self, argv, check_rc=False):
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        return done.returncode, done.stdout, done.stderr


def test_the_kernel_journal_is_read_where_dmesg_is_refused():
    runner = Runner(
        {
            "dmesg": (1, "", "dmesg: read kernel buffer failed: Operation not permitted"),
            "journalctl": (0, "\n".join(KEPT[:1] + IGNORED[:1]) + "\n", ""),
        },
        {},
    )
    text = support_bundle.kernel_findings(runner, list(findings.KERNEL_PATTERNS["blackwell"]), 4096)
    assert runner.ran == ["dmesg", "journalctl"]
    assert text.splitlines() == [
        "# journalctl -k --no-pager --output=short-iso: 1 of 2 lines match the hardware patterns",
        KEPT[0],
    ]
    runner = Runner({"dmesg": (1, "", "refused"), "journalctl": (1, "", "no journal")}, {})
    text = support_bundle.kernel_findings(runner, ["x"], 4096)
    assert text.startswith("# the kernel log is not readable here\ndmesg --time-format iso: exit 1: refused\n")
    assert support_bundle.kernel_findings(runner, [], 4096) is None


def test_a_tool_the_host_has_runs_and_one_it_has_not_is_noted(tmp_path):
    tool = tmp_path / "npu-smi"
    tool.write_text('#!/bin/sh\necho "+ npu-smi $*"\nexit 3\n')
    tool.chmod(0o755)
    runner = Commands({}, {"npu-smi": str(tool)})
    commands = [
        {"name": "npu-smi-info", "argv": ["npu-smi", "info"]},
        {"name": "hccn-0-link", "argv": ["hccn_tool", "-i", "0", "-link", "-g"]},
    ]
    found, absent = support_bundle.run_tools(runner, commands, [], 4096)
    assert found == [("npu-smi-info", "$ npu-smi info\n# exit 3\n+ npu-smi info\n")]
    assert absent == ["command hccn-0-link: hccn_tool is not on this host"]
