# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""What an AMD Instinct host needs before the engines start, decided from its facts and the plan.

Plain Python (no Ansible imports), unit-tested directly; the ``rocm_prerequisites`` filter hands it
to the ``rocm`` role together with the compatibility table the role keeps as data.
"""

from __future__ import annotations

import re

# The day-0 image predates the DSpark and MoE fixes the MI355X path needs (the recipe's ROCm note).
DAY0_IMAGE = "vllm/vllm-openai-rocm:kimi-k3"
NIGHTLY_ROCM100 = "vllm/vllm-openai-rocm:nightly-rocm100"


def version_tuple(text):
    """``"6.4.1"`` -> ``(6, 4, 1)``; ``None`` when there is no leading number."""
    parts = re.findall(r"\d+", str(text or "").split("-", maxsplit=1)[0])
    return tuple(int(p) for p in parts) or None


def _accessible(state):
    """A ``stat`` result (or a bool): present, readable and writable."""
    if isinstance(state, dict):
        return bool(state.get("exists") and state.get("readable") and state.get("writeable"))
    return bool(state)


def _entry_for(models, table):
    for entry in table:
        if any(str(pattern).upper() in str(model).upper() for pattern in entry["models"] for model in models):
            return entry
    return None


def rocm_prerequisites(facts, services, parameters=None, host="this host", devices=None, table=()):
    """Decide what the ``rocm`` role checks and does on one host.

    ``facts``: ``k3_accelerator``; ``services``: the host's planned services; ``parameters``: the
    plan's; ``devices``: ``/dev/kfd``, ``/dev/dri``, ``/dev/infiniband`` to their ``stat`` results (or
    booleans): present, readable and writable; ``table``: the compatibility table, entries with
    ``models`` (name patterns), ``min_rocm`` and ``min_amdgpu`` (version strings or null), ``note``.

    Returns ``problems`` (each naming the host, what is wrong and the fix) and ``rdma`` (the planned
    containers get /dev/infiniband: memlock limits and the verbs check apply).
    """
    facts = facts or {}
    parameters = parameters or {}
    devices = {path: _accessible(state) for path, state in (devices or {}).items()}
    problems = []
    models = facts.get("device_models") or []
    engines = [s for s in services if s.get("kind") == "vllm"]
    want = int(parameters.get("devices_per_node") or 0)

    if facts.get("vendor") != "amd" or not models:
        problems.append(
            "%s: no AMD GPU found (amd-smi / rocm-smi: %s). Fix: install the amdgpu driver and ROCm, or put "
            "this host into another profile's inventory." % (host, facts.get("vendor") or "no accelerator tool")
        )
    else:
        if want and len(models) < want:
            problems.append(
                "%s: %d AMD GPU(s) found (%s), the profile runs %d per node. Fix: set k3_devices_per_node, or "
                "use a host with %d GPUs." % (host, len(models), ", ".join(sorted(set(models))), want, want)
            )
        entry = _entry_for(models, table)
        if entry is None:
            problems.append(
                "%s: %s is not in the compatibility table (rocm_compatibility): the recipes run MI355X/MI350X. "
                "Fix: add the model with its validated ROCm and amdgpu versions." % (host, sorted(set(models))[0])
            )
        else:
            for key, fact, label in (("min_rocm", "rocm_version", "ROCm"), ("min_amdgpu", "driver_version", "amdgpu")):
                need = entry.get(key)
                have = facts.get(fact)
                if not need:
                    continue
                if version_tuple(have) is None:
                    problems.append(
                        "%s: the %s version could not be read (amd-smi version; /sys/module/amdgpu/version). "
                        "Fix: install %s %s or newer." % (host, label, label, need)
                    )
                elif version_tuple(have) < version_tuple(need):
                    problems.append(
                        "%s: %s %s is installed; %s needs %s %s or newer (%s). Fix: upgrade %s."
                        % (host, label, have, sorted(set(models))[0], label, need, entry.get("note", ""), label)
                    )

    for path in ("/dev/kfd", "/dev/dri"):
        if engines and not devices.get(path, False):
            problems.append(
                "%s: %s is missing or not readable and writable: the engines' containers get the GPUs through it "
                "(--device=%s). Fix: load the amdgpu driver (modprobe amdgpu) and check the device permissions."
                % (host, path, path)
            )

    rdma = any("/dev/infiniband" in (s.get("container") or {}).get("devices", []) for s in services)
    if rdma and not (devices.get("/dev/infiniband", False) and facts.get("rdma_devices")):
        problems.append(
            "%s: the planned containers use RDMA (--device=/dev/infiniband, KV transfer over MoRIIO) but the host "
            "shows no RDMA device. Fix: install the NIC driver and rdma-core, and check ibv_devices." % host
        )

    images = sorted({s.get("image") for s in engines if s.get("image")})
    dspark = any("dspark" in " ".join(s.get("argv") or []) for s in engines)
    if DAY0_IMAGE in images and dspark:
        problems.append(
            "%s: %s predates the DSpark and MoE fixes this profile's MI355X path needs. Fix: set "
            "k3_engine_image to %s (the ROCm 10.0 nightly the command builder uses) or to the profile's "
            "default image." % (host, DAY0_IMAGE, NIGHTLY_ROCM100)
        )
    return {"problems": problems, "rdma": rdma, "images": images}
