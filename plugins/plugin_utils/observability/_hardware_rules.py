# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Alert rules on the accelerators, the fabric and the hosts' disks.

Pure functions; no Ansible imports. The metric names are the real ones of each exporter, as
recorded pages show them (tests/unit/fixtures/exporters/SOURCES.md names where each was seen):

- NVIDIA dcgm-exporter (device labels ``gpu`` and ``UUID``): ``DCGM_FI_DEV_XID_ERRORS`` (the last
  XID, 0 for none), ``DCGM_FI_DEV_ROW_REMAP_FAILURE`` (1 when a row could not be remapped),
  ``DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS`` and ``DCGM_FI_DEV_ECC_DBE_VOL_TOTAL`` (uncorrectable
  memory errors), the four ``DCGM_FI_DEV_NVLINK_*_ERROR_COUNT_TOTAL`` counters, and the clock
  event reasons bitmask (``DCGM_FI_DEV_CLOCK_THROTTLE_REASONS``, renamed
  ``DCGM_FI_DEV_CLOCKS_EVENT_REASONS``), whose software and hardware thermal slowdown bits are
  0x20 and 0x40;
- AMD device-metrics-exporter (device label ``gpu_id``; with the GPU Operator every name has the
  prefix ``amd_``): ``gpu_health`` (1 healthy, 0 not) and ``gpu_ecc_uncorrect_<block>`` counters;
- Ascend NPU Exporter (device label ``id``): ``npu_chip_info_health_status``,
  ``npu_chip_info_network_status`` and ``npu_chip_info_link_status`` (1 good, 0 bad, -1 unknown),
  ``npu_chip_info_hbm_ecc_double_bit_error_cnt``;
- Prometheus' node exporter: ``node_infiniband_state_id`` (4 active),
  ``node_infiniband_port_errors_received_total``, ``node_infiniband_link_downed_total`` (labels
  ``device`` and ``port``), ``node_filesystem_avail_bytes`` / ``node_filesystem_size_bytes``.

Every rule keeps ``k3_host`` (the scrape target's label) and the device's labels, and its summary
names both.
"""

from __future__ import annotations

GROUP = "kimi-k3-hardware"
# NVML's SwThermalSlowdown (0x20) and HwThermalSlowdown (0x40): adjacent bits, so floor(reasons / 0x20) % 4
# is not 0 when either is set.
THERMAL_LOW_BIT = 0x20


def _rule(alert, expr, severity, summary, description, duration="0m"):
    return {
        "alert": alert,
        "expr": expr,
        "for": duration,
        "labels": {"severity": severity},
        "annotations": {"summary": summary, "description": description},
    }


def _names(pattern):
    return '{__name__=~"%s"}' % pattern


def _nvidia(window):
    gpu = "GPU {{ $labels.gpu }} ({{ $labels.UUID }}) on {{ $labels.k3_host }}"
    by = "k3_host, gpu, UUID"
    return [
        _rule(
            "K3GpuXidError",
            "max by (%s) (DCGM_FI_DEV_XID_ERRORS) > 0" % by,
            "critical",
            "%s reported XID {{ $value }}" % gpu,
            "dcgm-exporter's last XID of the GPU. Look the code up in NVIDIA's XID catalogue; an error that "
            "leaves the GPU unusable (79: fallen off the bus; 48, 94, 95: uncorrectable ECC) needs its engine "
            "group drained and the GPU reset before the group serves again.",
        ),
        _rule(
            "K3GpuRowRemapFailure",
            "max by (%s) (DCGM_FI_DEV_ROW_REMAP_FAILURE) > 0" % by,
            "critical",
            "%s could not remap a memory row" % gpu,
            "The GPU ran out of spare rows: take its node out of service (playbooks/remove_node.yml) and "
            "have the GPU replaced.",
        ),
        _rule(
            "K3GpuUncorrectableMemoryErrors",
            "max by (%s) (increase(%s[%s])) > 0"
            % (by, _names("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS|DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"), window),
            "critical",
            "%s had {{ $value }} uncorrectable memory errors in %s" % (gpu, window),
            "Uncorrectable ECC errors (or rows remapped after them): the GPU needs a reset before the remap "
            "takes effect; drain its engine group and restart it.",
        ),
        _rule(
            "K3NvlinkErrors",
            "sum by (%s) (increase(%s[%s])) > 0"
            % (by, _names("DCGM_FI_DEV_NVLINK_(CRC_FLIT|CRC_DATA|REPLAY|RECOVERY)_ERROR_COUNT_TOTAL"), window),
            "warning",
            "%s counted {{ $value }} NVLink errors in %s" % (gpu, window),
            "CRC, replay or recovery errors on the GPU's NVLinks: a link that keeps counting slows every "
            "collective of its group; check the tray's cabling and the fabric manager's log.",
        ),
        _rule(
            "K3GpuThermalThrottling",
            "floor(max by (%s) (%s) / %d) %% 4 > 0"
            % (by, _names("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS|DCGM_FI_DEV_CLOCKS_EVENT_REASONS"), THERMAL_LOW_BIT),
            "warning",
            "%s is slowed down for heat" % gpu,
            "Its clock event reasons hold the software or hardware thermal slowdown bit (0x20, 0x40) for "
            "%s: check the node's cooling." % window,
            duration=window,
        ),
    ]


def _amd(window):
    gpu = "GPU {{ $labels.gpu_id }} on {{ $labels.k3_host }}"
    return [
        _rule(
            "K3AmdGpuUnhealthy",
            "min by (k3_host, gpu_id) (%s) == 0" % _names("(amd_)?gpu_health"),
            "critical",
            "%s is unhealthy" % gpu,
            "device-metrics-exporter reports the GPU unhealthy: drain its engine group and look at amd-smi "
            "and the kernel log of the node.",
        ),
        _rule(
            "K3AmdGpuUncorrectableEcc",
            "max by (k3_host, gpu_id) (increase(%s[%s])) > 0" % (_names("(amd_)?gpu_ecc_uncorrect_.+"), window),
            "critical",
            "%s had {{ $value }} uncorrectable ECC errors in %s" % (gpu, window),
            "Uncorrectable ECC errors in a block of the GPU: drain its engine group and reset the GPU.",
        ),
    ]


def _ascend(window):
    npu = "NPU {{ $labels.id }} on {{ $labels.k3_host }}"
    return [
        _rule(
            "K3NpuUnhealthy",
            "min by (k3_host, id) (npu_chip_info_health_status) == 0",
            "critical",
            "%s is unhealthy" % npu,
            "The NPU Exporter reports the chip unhealthy (npu_chip_info_error_code names the error): drain "
            "its engine group and read npu-smi info on the node.",
        ),
        _rule(
            "K3NpuNetworkDown",
            "min by (k3_host, id) (npu_chip_info_network_status) == 0",
            "critical",
            "the network of %s is down" % npu,
            "The chip's NIC cannot reach its peers: HCCL of its group will time out. Check it with hccn_tool "
            "-i {{ $labels.id }} -net_health -g and the link with -link -g.",
        ),
        _rule(
            "K3NpuLinkDown",
            "min by (k3_host, id) (npu_chip_info_link_status) == 0",
            "critical",
            "the link of %s is down" % npu,
            "The chip's network port is down: check its cable and hccn_tool -i {{ $labels.id }} -link -g.",
        ),
        _rule(
            "K3NpuHbmEccErrors",
            "max by (k3_host, id) (increase(npu_chip_info_hbm_ecc_double_bit_error_cnt[%s])) > 0" % window,
            "critical",
            "%s had {{ $value }} double-bit HBM errors in %s" % (npu, window),
            "Uncorrectable HBM errors on the chip: drain its engine group and check the chip's isolated pages.",
        ),
    ]


def _hosts(window, disk_free_ratio):
    port = "{{ $labels.device }} port {{ $labels.port }} on {{ $labels.k3_host }}"
    return [
        _rule(
            "K3RdmaPortDown",
            "node_infiniband_state_id != 4 and max_over_time(node_infiniband_state_id[1d]) == 4",
            "critical",
            "RDMA %s is not active" % port,
            "The port was active within the last day and is not now: KV transfer and collectives over it "
            "fail. Check the cable, the switch port and ibstat on the node.",
        ),
        _rule(
            "K3RdmaPortErrors",
            "sum by (k3_host, device, port) (increase(%s[%s])) > 0"
            % (_names("node_infiniband_(port_errors_received|link_downed)_total"), window),
            "warning",
            "RDMA %s counted {{ $value }} receive errors or link downs in %s" % (port, window),
            "A port that keeps counting errors slows or breaks the transfers over it: check its cable.",
        ),
        _rule(
            "K3DiskFilling",
            'node_filesystem_avail_bytes{fstype!~"tmpfs|overlay|squashfs"} '
            '/ node_filesystem_size_bytes{fstype!~"tmpfs|overlay|squashfs"} < %s' % disk_free_ratio,
            "warning",
            "{{ $labels.mountpoint }} on {{ $labels.k3_host }} is {{ $value | humanizePercentage }} free",
            "A filesystem of the node is nearly full (the checkpoint's, the logs', the compile caches'): "
            "a staging or a restart that writes there will fail.",
            duration=window,
        ),
    ]


def hardware_rules(window="5m", disk_free_ratio=0.1):
    """The rule group of the accelerators, the fabric and the disks ({"name", "rules"})."""
    return {
        "name": GROUP,
        "rules": _nvidia(window) + _amd(window) + _ascend(window) + _hosts(window, disk_free_ratio),
    }
