"""What the rocm role decides for a host (plugins/plugin_utils/platforms/_rocm.py).

Facts come from the real parser over recorded real outputs (tests/unit/fixtures/accelerator/amd):
amd-smi version (ROCm 6.4.1), amd-smi static (an MI350X) and /sys/module/amdgpu/version (6.12.12).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.kimi_k3.serving.plugins.module_utils import accelerator
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.platforms._rocm import rocm_prerequisites, version_tuple

FIXTURES = Path(__file__).parent / "fixtures" / "accelerator" / "amd"
TABLE = [{"models": ["MI355X", "MI350X"], "min_rocm": "7.0.0", "min_amdgpu": None, "note": "gfx950 needs ROCm 7.0"}]
DEVICES = {"/dev/kfd": True, "/dev/dri": True, "/dev/infiniband": True}
NIGHTLY = "vllm/vllm-openai-rocm:nightly"
DSPARK = ["vllm", "serve", "--speculative-config", '{"model":"/models/Inferact-Kimi-K3-DSpark","method":"dspark"}']


def mi350x_facts(gpus=8, rdma=("rdma0",)):
    """accelerator_facts on a host whose tools printed the recorded MI350X / ROCm 6.4.1 outputs."""
    smi = "/opt/rocm/bin/amd-smi"
    outputs = {
        (smi, "version"): (FIXTURES / "amd-smi-version_mi300x_rocm6.4.1.txt").read_text(),
        (smi, "static", "--asic"): (FIXTURES / "amd-smi-static_mi350x_gpu0_partial.txt").read_text(),
    }
    facts = accelerator.gather(
        run=lambda argv: (0, outputs[tuple(argv)], "") if tuple(argv) in outputs else (1, "", ""),
        read=lambda path: (
            (FIXTURES / "sys-module-amdgpu-version_mi300x-vf_6.12.12.txt").read_text()
            if path == "/sys/module/amdgpu/version"
            else None
        ),
        exists=lambda path: False,
        which=lambda name: smi if name == "amd-smi" else None,
    )
    facts["device_models"] = facts["device_models"] * gpus  # the recording shows GPU 0 of the node
    facts["rdma_devices"] = [{"name": name} for name in rdma]
    return facts


def engine(image=NIGHTLY, argv=("vllm", "serve"), rdma=True):
    devices = ["/dev/kfd", "/dev/dri"] + (["/dev/infiniband"] if rdma else [])
    return {"kind": "vllm", "image": image, "argv": list(argv), "container": {"devices": devices}}


def test_version_tuple():
    assert version_tuple("6.4.1") == (6, 4, 1) and version_tuple("7.0.0-123") == (7, 0, 0)
    assert version_tuple(None) is None and version_tuple("N/A") is None


def test_rocm_older_than_the_table_is_refused_naming_versions_and_fix():
    need = rocm_prerequisites(mi350x_facts(), [engine()], {"devices_per_node": 8}, "mi-n1", DEVICES, TABLE)
    assert need["problems"] == [
        "mi-n1: ROCm 6.4.1 is installed; AMD Instinct MI350X needs ROCm 7.0.0 or newer (gfx950 needs ROCm 7.0). "
        "Fix: upgrade ROCm."
    ]


def test_a_host_matching_the_table_passes():
    table = [dict(TABLE[0], min_rocm="6.4.0", min_amdgpu="6.12")]
    need = rocm_prerequisites(mi350x_facts(), [engine()], {"devices_per_node": 8}, "h", DEVICES, table)
    assert need["problems"] == [] and need["rdma"] is True and need["images"] == [NIGHTLY]


def test_the_amdgpu_driver_is_checked_too():
    table = [dict(TABLE[0], min_rocm="6.4.0", min_amdgpu="6.14.14")]
    [problem] = rocm_prerequisites(mi350x_facts(), [engine()], {}, "h", DEVICES, table)["problems"]
    assert problem.startswith("h: amdgpu 6.12.12 is installed; AMD Instinct MI350X needs amdgpu 6.14.14 or newer")


def test_fewer_gpus_than_the_profile_runs_and_a_model_outside_the_table():
    table = [dict(TABLE[0], min_rocm="6.4.0")]
    [problem] = rocm_prerequisites(mi350x_facts(gpus=1), [engine()], {"devices_per_node": 8}, "h", DEVICES, table)[
        "problems"
    ]
    assert problem.startswith("h: 1 AMD GPU(s) found (AMD Instinct MI350X), the profile runs 8 per node.")
    [problem] = rocm_prerequisites(mi350x_facts(), [engine()], {}, "h", DEVICES, [])["problems"]
    assert "AMD Instinct MI350X is not in the compatibility table (rocm_compatibility)" in problem


@pytest.mark.parametrize("missing", ["/dev/kfd", "/dev/dri"])
def test_missing_or_inaccessible_gpu_devices_are_refused(missing):
    table = [dict(TABLE[0], min_rocm="6.4.0")]
    devices = dict(DEVICES, **{missing: {"exists": True, "readable": True, "writeable": False}})
    [problem] = rocm_prerequisites(mi350x_facts(), [engine()], {}, "h", devices, table)["problems"]
    assert problem.startswith("h: %s is missing or not readable and writable" % missing)


def test_rdma_containers_need_rdma_devices():
    table = [dict(TABLE[0], min_rocm="6.4.0")]
    [problem] = rocm_prerequisites(mi350x_facts(rdma=()), [engine()], {}, "h", DEVICES, table)["problems"]
    assert "the planned containers use RDMA (--device=/dev/infiniband" in problem
    need = rocm_prerequisites(mi350x_facts(rdma=()), [engine(rdma=False)], {}, "h", DEVICES, table)
    assert need["problems"] == [] and need["rdma"] is False


def test_the_day0_image_with_dspark_is_refused_with_the_rocm100_nightly_advice():
    table = [dict(TABLE[0], min_rocm="6.4.0")]
    day0 = engine(image="vllm/vllm-openai-rocm:kimi-k3", argv=DSPARK)
    [problem] = rocm_prerequisites(mi350x_facts(), [day0], {}, "h", DEVICES, table)["problems"]
    assert "vllm/vllm-openai-rocm:kimi-k3 predates the DSpark and MoE fixes" in problem
    assert "vllm/vllm-openai-rocm:nightly-rocm100" in problem
    plain = engine(image="vllm/vllm-openai-rocm:kimi-k3")
    assert rocm_prerequisites(mi350x_facts(), [plain], {}, "h", DEVICES, table)["problems"] == []


def test_no_amd_gpu_at_all():
    [problem, *_unused] = rocm_prerequisites({}, [engine()], {}, "h", DEVICES, TABLE)["problems"]
    assert problem.startswith("h: no AMD GPU found")
