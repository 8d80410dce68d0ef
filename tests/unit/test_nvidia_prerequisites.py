"""What the nvidia role decides for a host (plugins/plugin_utils/platforms/_nvidia.py).

Facts come from the real parser over recorded real outputs (tests/unit/fixtures/accelerator), so a
decision is tested on what accelerator_facts really reports for that driver.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.kimi_k3.serving.plugins.module_utils import accelerator
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.platforms._nvidia import (
    driver_branch,
    nvidia_prerequisites,
)

FIXTURES = Path(__file__).parent / "fixtures" / "accelerator" / "nvidia"
OPEN_565 = (FIXTURES / "proc-driver-nvidia-version_open_x86_64_565.57.01.txt").read_text()
DOCKER = [{"runtime": "docker", "image": "vllm/vllm-openai:kimi-k3", "env": {"NCCL_SOCKET_IFNAME": "eth0"}}]


def facts_from(smi_fixture, rdma=()):
    """accelerator_facts' answer on a host whose nvidia-smi printed the recorded output."""
    text = (FIXTURES / smi_fixture).read_text()
    facts = accelerator.gather(
        run=lambda argv: (0, text, "") if argv[1:] == [] else (1, "", ""),
        read=lambda path: None,
        exists=lambda path: False,
        which=lambda name: "/usr/bin/nvidia-smi" if name == "nvidia-smi" else None,
    )
    facts["rdma_devices"] = [{"name": name} for name in rdma]
    return facts


@pytest.mark.parametrize(
    "version, branch",
    [("575.57.08", 575), ("580.126.09", 580), ("610.43.02", 610), (None, None), ("", None), ("N/A", None)],
)
def test_driver_branch(version, branch):
    assert driver_branch(version) == branch


def test_r575_is_refused_with_the_spec_advice_naming_host_and_image():
    need = nvidia_prerequisites(facts_from("nvidia-smi_b200_8gpu_575.57.08.txt"), DOCKER, host="gb-n3")
    assert need["driver_ok"] is False and need["driver_upgrade"] is False
    [problem] = need["problems"]
    assert problem.startswith("gb-n3: NVIDIA driver 575.57.08 is loaded (CUDA 12.9)")
    assert "vllm/vllm-openai:kimi-k3 is a CUDA 13 (cu130) build that needs an r580+ driver" in problem
    assert "k3_nvidia_driver_upgrade: true" in problem
    assert "build vLLM from the K3 branch against cu129 PyTorch" in problem


def test_r575_with_the_upgrade_allowed_is_upgraded_not_refused():
    need = nvidia_prerequisites(facts_from("nvidia-smi_b200_8gpu_575.57.08.txt"), DOCKER, host="h", upgrade=True)
    assert need["problems"] == [] and need["driver_upgrade"] is True and need["loaded_branch"] == 575


def test_no_driver_at_all_is_refused_or_installed():
    refused = nvidia_prerequisites({}, DOCKER, host="h")
    assert "h: no NVIDIA driver is loaded" in refused["problems"][0]
    assert nvidia_prerequisites({}, DOCKER, host="h", upgrade=True)["driver_upgrade"] is True


@pytest.mark.parametrize("fixture", ["nvidia-smi_gb200_4gpu_580.126.09.txt", "nvidia-smi_gb200_4gpu_590.48.01.txt"])
def test_r580_and_newer_pass_and_need_no_upgrade(fixture):
    need = nvidia_prerequisites(facts_from(fixture), DOCKER, host="h", upgrade=True)
    assert need["problems"] == [] and need["driver_ok"] and not need["driver_upgrade"]


def test_a_kmd_banner_r610_passes():
    need = nvidia_prerequisites(facts_from("nvidia-smi_h100-vfio-passthrough-vm_610.43.02_kmd-umd-format.txt"), DOCKER)
    assert need["loaded_branch"] == 610 and need["driver_ok"]


def test_container_toolkit_only_for_docker_services():
    facts = facts_from("nvidia-smi_gb200_4gpu_580.126.09.txt")
    assert nvidia_prerequisites(facts, DOCKER)["container_toolkit"] is True
    assert nvidia_prerequisites(facts, [{"runtime": "host", "env": {}}])["container_toolkit"] is False


def test_imex_on_grace_blackwell_across_nodes_only():
    gb200 = facts_from("nvidia-smi_gb200_4gpu_580.126.09.txt")
    nvlink = {"fabric": "nvlink"}
    assert nvidia_prerequisites(gb200, DOCKER, nvlink, node_count=2)["imex"] is True
    assert nvidia_prerequisites(gb200, DOCKER, nvlink, node_count=1)["imex"] is False
    assert nvidia_prerequisites(gb200, DOCKER, {"fabric": "rdma"}, node_count=2)["imex"] is False
    assert nvidia_prerequisites(gb200, DOCKER, nvlink, node_count=2)["fabricmanager"] is False


def test_fabric_manager_on_eight_gpu_nvswitch_boards():
    b200 = facts_from("nvidia-smi_b200_8gpu_570.158.01.txt")
    h100_pod = facts_from("nvidia-smi_h100_1gpu-in-k8s-pod_580.105.08_eks-p5.txt")
    assert nvidia_prerequisites(b200, DOCKER, upgrade=True)["fabricmanager"] is True
    assert nvidia_prerequisites(h100_pod, DOCKER)["fabricmanager"] is False


def test_peermem_follows_nccl_dmabuf_enable_0():
    facts = facts_from("nvidia-smi_gb200_4gpu_580.126.09.txt")
    off = [{"runtime": "docker", "image": "i", "env": {"NCCL_DMABUF_ENABLE": "0"}}]
    assert nvidia_prerequisites(facts, off)["peermem"] is True
    assert nvidia_prerequisites(facts, DOCKER)["peermem"] is False


def test_mlx5_without_dmabuf_support_is_refused_unless_dmabuf_is_off():
    facts = facts_from("nvidia-smi_gb200_4gpu_580.126.09.txt", rdma=["mlx5_0", "mlx5_1"])
    proprietary = OPEN_565.replace("Open Kernel Module", "Kernel Module")
    need = nvidia_prerequisites(facts, DOCKER, host="n1", kernel="5.4.0-216-generic", proc_version=proprietary)
    [problem] = need["problems"]
    assert problem.startswith("n1: the mlx5 devices (mlx5_0, mlx5_1) cannot register GPU memory by dma-buf")
    assert "kernel 5.4.0-216-generic is older than 5.12" in problem and "proprietary NVIDIA kernel module" in problem
    assert "errno 524" in problem and "k3_nccl_dmabuf: false" in problem
    off = [{"runtime": "docker", "image": "i", "env": {"NCCL_DMABUF_ENABLE": "0"}}]
    assert nvidia_prerequisites(facts, off, kernel="5.4.0", proc_version=proprietary)["problems"] == []
    ok = nvidia_prerequisites(facts, DOCKER, kernel="6.8.0-60-generic", proc_version=OPEN_565)
    assert ok["problems"] == []


def test_imex_and_fabric_manager_can_be_forced_either_way():
    gb200 = facts_from("nvidia-smi_gb200_4gpu_580.126.09.txt")
    nvlink = {"fabric": "nvlink"}
    forced = nvidia_prerequisites(gb200, DOCKER, nvlink, node_count=2, imex=False, fabricmanager="true")
    assert (forced["imex"], forced["fabricmanager"]) == (False, True)
    auto = nvidia_prerequisites(gb200, DOCKER, nvlink, node_count=2, imex="auto", fabricmanager="auto")
    assert (auto["imex"], auto["fabricmanager"]) == (True, False)
