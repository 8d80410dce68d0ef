# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Each device's health now, from one page of the host's accelerator exporter (status.yml).

Pure functions; no Ansible imports. The same signals as the hardware alerts
(``_hardware_rules.py``), read at one instant instead of over a window:

- NVIDIA dcgm-exporter (device ``gpu``): a last XID other than 0, a failed row remap;
- AMD device-metrics-exporter (device ``gpu_id``): ``gpu_health`` (or ``amd_gpu_health``) 0;
- Ascend NPU Exporter (device ``id``): ``npu_chip_info_health_status`` 0 (with its error code),
  ``npu_chip_info_network_status`` or ``npu_chip_info_link_status`` 0.

``device_health(page)``: ``{"devices": n, "unhealthy": [{"device", "reason"}], "summary": text}``.
A page with none of those metrics (an exporter without devices, a wrong page) reports 0 devices.
"""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability._metrics import samples

# metric: (device label, the device's kind in a message, test of a bad value, what a bad value means)
SIGNALS = {
    "DCGM_FI_DEV_XID_ERRORS": ("gpu", "GPU", lambda v: v > 0, "XID %d"),
    "DCGM_FI_DEV_ROW_REMAP_FAILURE": ("gpu", "GPU", lambda v: v > 0, "row remap failed"),
    "gpu_health": ("gpu_id", "GPU", lambda v: v == 0, "unhealthy"),
    "amd_gpu_health": ("gpu_id", "GPU", lambda v: v == 0, "unhealthy"),
    "npu_chip_info_health_status": ("id", "NPU", lambda v: v == 0, "unhealthy"),
    "npu_chip_info_network_status": ("id", "NPU", lambda v: v == 0, "network down"),
    "npu_chip_info_link_status": ("id", "NPU", lambda v: v == 0, "link down"),
}
ERROR_CODE = "npu_chip_info_error_code"


def device_health(page):
    """The devices the page reports and those that are not healthy now, with why."""
    devices, bad, codes = set(), {}, {}
    for name, labels, value in samples(page):
        if name == ERROR_CODE and labels.get("id") is not None:
            codes[labels["id"]] = int(value)
        signal = SIGNALS.get(name)
        if signal is None or labels.get(signal[0]) is None:
            continue
        label, kind, failing, reason = signal
        device = "%s %s" % (kind, labels[label])
        devices.add(device)
        if failing(value):
            bad.setdefault(device, []).append(reason % value if "%" in reason else reason)
    unhealthy = []
    for device in sorted(bad, key=_order):
        reasons = bad[device]
        number = device.split(" ", 1)[1]
        if device.startswith("NPU") and "unhealthy" in reasons and codes.get(number):
            reasons = ["unhealthy (error code %d)" % codes[number] if r == "unhealthy" else r for r in reasons]
        unhealthy.append({"device": device, "reason": ", ".join(reasons)})
    if not devices:
        summary = "no device reported"
    elif not unhealthy:
        summary = "%d healthy" % len(devices)
    else:
        summary = "%d of %d unhealthy: %s" % (
            len(unhealthy),
            len(devices),
            "; ".join("%s %s" % (u["device"], u["reason"]) for u in unhealthy),
        )
    return {"devices": len(devices), "unhealthy": unhealthy, "summary": summary}


def _order(device):
    kind, number = device.split(" ", 1)
    return (kind, int(number) if number.isdigit() else 0, number)
