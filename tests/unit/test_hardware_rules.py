"""The hardware alert rules, run by the real promtool on series taken from recorded exporter pages.

Each input series is a sample of a recorded page (tests/unit/fixtures/exporters, sources in its
SOURCES.md) with its own labels, plus the ``k3_host`` label the scrape target adds; its values then
change as a failing device's would. promtool comes from the Debian prometheus package that
``make test`` fetches for the test hosts (.cache/debian-debs), unpacked here.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import unpacked_program

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability import _hardware_rules as hardware
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability import _monitoring as monitoring
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability._metrics import samples

# The package is a set-up step of make test (not of make test-fast).
pytestmark = pytest.mark.slow

PAGES = Path(__file__).parent / "fixtures" / "exporters"
HOST = "gb300-n3"


@pytest.fixture(scope="module")
def promtool(tmp_path_factory):
    return unpacked_program("prometheus", "usr/bin/promtool", tmp_path_factory.mktemp("prometheus"))


@pytest.fixture(scope="module")
def rules_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("rules") / "rules.yml"
    path.write_text(yaml.safe_dump(monitoring.alert_rules(), sort_keys=False))
    return path


def recorded(page, name, **match):
    """The labels of the first sample of ``name`` on a recorded page (whose labels include ``match``)."""
    for sample, labels, _value in samples((PAGES / page).read_text(encoding="utf-8")):
        if sample == name and all(labels.get(k) == v for k, v in match.items()):
            return {k: v for k, v in labels.items() if v != ""}
    raise AssertionError("%s has no sample of %s %s" % (page, name, match))


def series(name, labels, values):
    body = ",".join('%s="%s"' % (k, v) for k, v in sorted(dict(labels, k3_host=HOST).items()))
    return {"series": "%s{%s}" % (name, body), "values": values}


def rule(alert):
    return next(r for r in hardware.hardware_rules()["rules"] if r["alert"] == alert)


def expanded(text, labels, value):
    """An annotation as Prometheus fills it in (the {{ $labels.x }} and {{ $value }} these rules use)."""
    text = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: dict(labels, k3_host=HOST)[m.group(1)], text)
    return text.replace("{{ $value }}", value)


def at(eval_time, alert, device=None, value=None):
    """At ``eval_time``: ``alert`` fires for ``device`` alone (with ``value``), or not at all."""
    return {"eval_time": eval_time, "alertname": alert, "exp_alerts": [fires(alert, device, value)] if device else []}


def fires(alert, device, value):
    """The alert promtool must see: its labels (host and device) and both annotations filled in."""
    found = rule(alert)
    return {
        "exp_labels": dict(device, k3_host=HOST, severity=found["labels"]["severity"]),
        "exp_annotations": {k: expanded(v, device, value) for k, v in found["annotations"].items()},
    }


NVIDIA_T4 = "nvidia-dcgm-exporter-t4_460.106.00-470.182.03_datadog-fixture_partial.prom"
NVIDIA_L40S = "nvidia-dcgm-exporter-l40s_595.58.03_uks.prom"
ASCEND = "huawei-npu-exporter-910Awn_unit-test-golden-mock.prom"
AMD = "amd-device-metrics-exporter-issue259-gpu0_ecc-uncorrect_partial.prom"
NODE = "prometheus-node_exporter-infiniband_e2e-fixture_partial.prom"


def cases():
    """(input series, alert tests): each alert fires on the series that fails and on no other."""
    xid = recorded(NVIDIA_T4, "DCGM_FI_DEV_XID_ERRORS")
    remap = recorded(NVIDIA_L40S, "DCGM_FI_DEV_ROW_REMAP_FAILURE")
    clocks = recorded(NVIDIA_T4, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS")
    npu0 = recorded(ASCEND, "npu_chip_info_health_status", id="0")
    npu1 = recorded(ASCEND, "npu_chip_info_health_status", id="1")
    net = recorded(ASCEND, "npu_chip_info_network_status", id="2")
    ecc = recorded(AMD, "gpu_ecc_uncorrect_hdp")
    port1 = recorded(NODE, "node_infiniband_state_id", device="mlx4_0", port="1")
    port2 = recorded(NODE, "node_infiniband_state_id", device="mlx4_0", port="2")
    inputs = [
        series("DCGM_FI_DEV_XID_ERRORS", xid, "0 0 79x10"),
        series("DCGM_FI_DEV_ROW_REMAP_FAILURE", remap, "0 0 0 1x10"),
        # 1 is the recorded value (GpuIdle): no alert; 64 is HwThermalSlowdown, from minute 3 on.
        series("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", clocks, "1 1 1 64x10"),
        series("npu_chip_info_health_status", npu0, "1 1 0x10"),
        series("npu_chip_info_health_status", npu1, "1x12"),
        series("npu_chip_info_network_status", net, "1 0x10"),
        series("gpu_ecc_uncorrect_hdp", ecc, "0 0 0 2x10"),
        # Port 1 goes down at minute 4; port 2 was never active (an unused port): no alert.
        series("node_infiniband_state_id", port1, "4 4 4 4 1x10"),
        series("node_infiniband_state_id", port2, "1x12"),
    ]
    gpu = {"gpu": "0"}
    tests = [
        at("1m", "K3GpuXidError"),
        at("3m", "K3GpuXidError", dict(gpu, UUID=xid["UUID"]), "79"),
        at("4m", "K3GpuRowRemapFailure", dict(gpu, UUID=remap["UUID"]), "1"),
        at("2m", "K3GpuThermalThrottling"),
        at("10m", "K3GpuThermalThrottling", dict(gpu, UUID=clocks["UUID"]), "2"),
        at("4m", "K3NpuUnhealthy", {"id": "0"}, "0"),
        at("4m", "K3NpuNetworkDown", {"id": "2"}, "0"),
        at("5m", "K3AmdGpuUncorrectableEcc", {"gpu_id": "0"}, "2"),
        at("3m", "K3RdmaPortDown"),
        at("6m", "K3RdmaPortDown", port1, "1"),
    ]
    return inputs, tests


def run(promtool, rules_file, tests, tmp_path):
    inputs, _unused = cases()
    spec = {
        "rule_files": [str(rules_file)],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": inputs, "alert_rule_test": tests}],
    }
    path = tmp_path / "tests.yml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return subprocess.run([str(promtool), "test", "rules", str(path)], capture_output=True, text=True, check=False)


def test_promtool_accepts_every_rule(promtool, rules_file):
    out = subprocess.run(
        [str(promtool), "check", "rules", str(rules_file)], capture_output=True, text=True, check=False
    )
    count = sum(len(group["rules"]) for group in monitoring.alert_rules()["groups"])
    assert out.returncode == 0 and "SUCCESS: %d rules found" % count in out.stdout, out.stdout + out.stderr


def test_each_alert_fires_on_the_recorded_series_naming_host_and_device(promtool, rules_file, tmp_path):
    _unused, tests = cases()
    out = run(promtool, rules_file, tests, tmp_path)
    assert out.returncode == 0 and "SUCCESS" in out.stdout, out.stdout[-4000:] + out.stderr[-2000:]


def test_promtool_fails_an_expectation_the_rules_do_not_meet(promtool, rules_file, tmp_path):
    _unused, tests = cases()
    wrong = [dict(t, exp_alerts=[]) if t["alertname"] == "K3NpuUnhealthy" else t for t in tests]
    out = run(promtool, rules_file, wrong, tmp_path)
    assert out.returncode != 0 and "K3NpuUnhealthy" in out.stdout + out.stderr, out.stdout[-3000:]


def test_every_summary_names_the_host_and_a_device():
    for found in hardware.hardware_rules()["rules"]:
        summary = found["annotations"]["summary"]
        assert "{{ $labels.k3_host }}" in summary, found["alert"]
        assert re.search(r"\$labels\.(gpu|gpu_id|id|device|mountpoint)\b", summary), found["alert"]
        by = re.search(r"by \(([^)]*)\)", found["expr"])
        assert by is None or "k3_host" in by.group(1), found["alert"]
