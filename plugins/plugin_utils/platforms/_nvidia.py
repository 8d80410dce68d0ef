# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""What an NVIDIA host needs before the engines start, decided from its facts and the plan.

Plain Python (no Ansible imports) so it is unit-tested directly; the ``nvidia_prerequisites``
filter hands it to the ``nvidia`` role.
"""

from __future__ import annotations

import re

# The kimi-k3 image is a CUDA 13 (cu130) build only: it needs the r580 driver branch or newer.
MIN_BRANCH = 580
# mlx5 registers GPU memory through dma-buf from Linux 5.12 on, and only with NVIDIA's open kernel modules.
DMABUF_MIN_KERNEL = (5, 12)
# Grace-Blackwell trays join NVLink domains across nodes (MNNVL): IMEX shares GPU memory between them.
MNNVL_MODELS = ("GB200", "GB300")
# HGX boards with NVSwitch run the fabric manager (one NVLink domain inside the node).
NVSWITCH_MODELS = ("B200", "B300", "H100", "H200", "H800", "A100")


def driver_branch(version):
    """``"575.57.08"`` -> ``575``; ``None`` for no or an unreadable version."""
    match = re.match(r"\s*(\d+)\.", str(version or ""))
    return int(match.group(1)) if match else None


def kernel_tuple(release):
    match = re.match(r"(\d+)\.(\d+)", str(release or ""))
    return (int(match.group(1)), int(match.group(2))) if match else None


def _truthy(value):
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def _mentions(models, names):
    return any(name in str(model).upper() for model in models for name in names)


# The filter's documented options (plugins/filter/nvidia_prerequisites.py), one argument each.
def nvidia_prerequisites(  # noqa: PLR0913
    facts,
    services,
    parameters=None,
    *,
    host="this host",
    node_count=1,
    kernel=None,
    proc_version=None,
    upgrade=False,
    min_branch=MIN_BRANCH,
    imex="auto",
    fabricmanager="auto",
):
    """Decide what the ``nvidia`` role checks and does on one host.

    ``facts``: ``k3_accelerator`` from accelerator_facts; ``services``: this host's planned services;
    ``parameters``: the plan's parameters; ``node_count``: NVIDIA nodes in the deployment; ``kernel``:
    the running kernel release; ``proc_version``: the text of /proc/driver/nvidia/version (or None);
    ``upgrade``: the operator allows installing the r580 branch (``k3_nvidia_driver_upgrade``);
    ``imex``, ``fabricmanager``: ``auto`` decides from the devices and the plan, a boolean forces it.

    Returns ``problems`` (refusals, each naming the host, what is wrong and the fix; empty when the
    host may proceed) and what to do: ``driver_upgrade``, ``container_toolkit``, ``imex``,
    ``fabricmanager``, ``peermem``, with ``loaded_version`` / ``loaded_branch`` for messages.
    """
    facts = facts or {}
    parameters = parameters or {}
    models = facts.get("device_models") or []
    loaded = facts.get("driver_version") or None
    branch = driver_branch(loaded)
    images = sorted({s.get("image") for s in services if s.get("runtime") == "docker" and s.get("image")})
    image = ", ".join(images) or "the kimi-k3 image"
    problems = []

    driver_ok = branch is not None and branch >= min_branch
    driver_upgrade = not driver_ok and bool(upgrade)
    if not driver_ok and not upgrade:
        found = (
            "NVIDIA driver %s is loaded (CUDA %s)" % (loaded, facts.get("cuda_version") or "unknown")
            if loaded
            else "no NVIDIA driver is loaded"
        )
        problems.append(
            "%s: %s, but %s is a CUDA 13 (cu130) build that needs an r%d+ driver. Fix: upgrade the driver "
            "(set k3_nvidia_driver_upgrade: true to install the r%d branch from NVIDIA's repository, pinned and "
            "held, with k3_nvidia_reboot: true to let the run reboot the node), or build vLLM from the K3 branch "
            "against cu129 PyTorch yourself." % (host, found, image, min_branch, min_branch)
        )

    env = {}
    for service in services:
        env.update(service.get("env") or {})
    dmabuf_off = str(env.get("NCCL_DMABUF_ENABLE", "")) == "0"
    rdma = [d.get("name") for d in facts.get("rdma_devices") or [] if str(d.get("name", "")).startswith("mlx5")]
    if rdma and not dmabuf_off and driver_ok:
        reasons = []
        kver = kernel_tuple(kernel)
        if kver is not None and kver < DMABUF_MIN_KERNEL:
            reasons.append("kernel %s is older than %d.%d" % ((kernel,) + DMABUF_MIN_KERNEL))
        if proc_version and "Open Kernel Module" not in proc_version:
            reasons.append("the proprietary NVIDIA kernel module is loaded (dma-buf needs the open modules)")
        if reasons:
            problems.append(
                "%s: the mlx5 devices (%s) cannot register GPU memory by dma-buf: %s. NCCL 2.28 registers dma-buf "
                "by default and engine init would fail with mlx5dv_reg_dmabuf_mr errno 524. Fix: set "
                "k3_nccl_dmabuf: false (NCCL_DMABUF_ENABLE=0; nvidia_peermem is then loaded here), or move to "
                "the open kernel modules on a 5.12+ kernel." % (host, ", ".join(rdma), "; ".join(reasons))
            )

    multi_node_nvlink = parameters.get("fabric") == "nvlink" and node_count > 1
    auto_imex = multi_node_nvlink and _mentions(models, MNNVL_MODELS)
    auto_fabricmanager = _mentions(models, NVSWITCH_MODELS) and not _mentions(models, MNNVL_MODELS) and len(models) >= 8
    return {
        "problems": problems,
        "loaded_version": loaded,
        "loaded_branch": branch,
        "driver_ok": driver_ok,
        "driver_upgrade": driver_upgrade,
        "container_toolkit": bool(images),
        "imex": auto_imex if str(imex).lower() == "auto" else _truthy(imex),
        "fabricmanager": auto_fabricmanager if str(fabricmanager).lower() == "auto" else _truthy(fabricmanager),
        "peermem": dmabuf_off,
    }
