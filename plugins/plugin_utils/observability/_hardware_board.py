# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The hardware dashboard's panels: accelerators, RDMA ports and disks, per host and device.

Pure data; no Ansible imports. The metric names are the exporters' real ones (those the hardware
alerts read, ``_hardware_rules.py``, and those seen on the recorded pages of
tests/unit/fixtures/exporters). A panel whose exporter a deployment does not run stays empty:
one dashboard serves every platform.

``panels(window)``: ``[(title, [(expr, legend)], unit)]`` in the dashboard's order, two per row:
the accelerators' health first (what an operator opens the dashboard for), then temperatures,
then the fabric and the disks, then whether the exporters are scraped at all.
"""

from __future__ import annotations

FS = 'fstype!~"tmpfs|overlay|squashfs"'


def panels(window="5m"):
    """The hardware dashboard's panels."""
    gpu = "GPU {{gpu}} {{k3_host}}"
    amd = "GPU {{gpu_id}} {{k3_host}}"
    npu = "NPU {{id}} {{k3_host}}"
    return [
        ("NVIDIA: last XID (0: none)", [("max by (k3_host, gpu) (DCGM_FI_DEV_XID_ERRORS)", gpu)], None),
        (
            "AMD and Ascend: health (1 healthy)",
            [
                ('min by (k3_host, gpu_id) ({__name__=~"(amd_)?gpu_health"})', amd),
                ("min by (k3_host, id) (npu_chip_info_health_status)", npu),
            ],
            None,
        ),
        (
            "Ascend: chip network and link (1 up)",
            [
                ("min by (k3_host, id) (npu_chip_info_network_status)", "network " + npu),
                ("min by (k3_host, id) (npu_chip_info_link_status)", "link " + npu),
            ],
            None,
        ),
        (
            "NVLink errors per second",
            [
                (
                    'sum by (k3_host, gpu) (rate({__name__=~"DCGM_FI_DEV_NVLINK_.+_ERROR_COUNT_TOTAL"}[%s]))' % window,
                    gpu,
                )
            ],
            None,
        ),
        (
            "Temperature",
            [
                ("max by (k3_host, gpu) (DCGM_FI_DEV_GPU_TEMP)", gpu),
                ("max by (k3_host, id) (npu_chip_info_temperature)", npu),
            ],
            "celsius",
        ),
        (
            "RDMA port state (4 active)",
            [("min by (k3_host, device, port) (node_infiniband_state_id)", "{{device}} port {{port}} {{k3_host}}")],
            None,
        ),
        (
            "Free disk",
            [
                (
                    "min by (k3_host, mountpoint) (node_filesystem_avail_bytes{%s} / node_filesystem_size_bytes{%s})"
                    % (FS, FS),
                    "{{mountpoint}} {{k3_host}}",
                )
            ],
            "percentunit",
        ),
        ("Exporters up", [('up{job=~"k3-node|k3-accelerator"}', "{{k3_service}} {{k3_host}}")], None),
    ]
