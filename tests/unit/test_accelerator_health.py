"""Each device's health now, from a recorded exporter page (status.yml's DEVICES column and problems).

The pages are recorded real ones (tests/unit/fixtures/exporters/SOURCES.md); a failing device is
made by flipping one value the way the sandbox's stand-in exporter does (its ``render``).
"""

from __future__ import annotations

import copy
from pathlib import Path

from doubles.accelerator_exporter import render
from test_exporters_plan import watched

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability._accelerator_health import device_health
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations import _status as status
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _planner as planner

PAGES = Path(__file__).parent / "fixtures" / "exporters"
NPU = (PAGES / "huawei-npu-exporter-910Awn_unit-test-golden-mock.prom").read_text()
VGPU = (PAGES / "nvidia-dcgm-exporter-grid-a100-8c-vgpu_580.65.06_vks.prom").read_text()
L40S = (PAGES / "nvidia-dcgm-exporter-l40s_595.58.03_uks.prom").read_text()
# The stand-in's healthy baseline: the mock page has no chip network (network and link status 0).
UP = {"npu_chip_info_network_status": "1", "npu_chip_info_link_status": "1"}


def test_the_recorded_npu_page_reports_its_eight_chips_without_a_network():
    health = device_health(NPU)
    assert health["devices"] == 8
    assert [u["device"] for u in health["unhealthy"]] == ["NPU %d" % n for n in range(8)]
    assert {u["reason"] for u in health["unhealthy"]} == {"link down, network down"}


def test_a_chip_reported_unhealthy_is_named_with_its_error_code():
    page = render(
        NPU, UP, [("npu_chip_info_health_status", "id", "3", "0"), ("npu_chip_info_error_code", "id", "3", "8")]
    )
    assert device_health(render(NPU, UP, [])) == {"devices": 8, "unhealthy": [], "summary": "8 healthy"}
    health = device_health(page)
    assert health["unhealthy"] == [{"device": "NPU 3", "reason": "unhealthy (error code 8)"}]
    assert health["summary"] == "1 of 8 unhealthy: NPU 3 unhealthy (error code 8)"


def test_a_gpu_with_an_xid_or_a_failed_row_remap_is_named():
    assert device_health(VGPU)["summary"] == "1 healthy"
    xid = device_health(render(VGPU, {"DCGM_FI_DEV_XID_ERRORS": "79"}, []))
    assert xid["unhealthy"] == [{"device": "GPU 0", "reason": "XID 79"}]
    remap = device_health(render(L40S, {"DCGM_FI_DEV_ROW_REMAP_FAILURE": "1"}, []))
    assert remap["unhealthy"] == [{"device": "GPU 0", "reason": "row remap failed"}]


def test_a_page_without_device_metrics_reports_none():
    node = (PAGES / "prometheus-node_exporter-infiniband_e2e-fixture_partial.prom").read_text()
    assert device_health(node) == {"devices": 0, "unhealthy": [], "summary": "no device reported"}
    assert device_health("")["devices"] == 0


def reported(plan, pages):
    gathered = {}
    for host, data in plan["hosts"].items():
        services = [
            {
                "name": s["name"],
                "unit": s["unit"],
                "active": "active/running",
                "restarts": 0,
                "health": 200,
                "has_health": True,
                "argv_matches": True,
                "version": None,
            }
            for s in data["services"]
        ]
        gathered[host] = {"services": services, "drift": [], "unplanned": [], "accelerators": pages.get(host, {})}
    return gathered


def test_status_shows_each_accelerator_hosts_devices_and_fails_naming_a_bad_one():
    plan = planner.build_plan(copy.deepcopy(watched("a3-mixed-4node")))
    engines = [h for h, d in plan["hosts"].items() if any(s["name"] == "npu-exporter" for s in d["services"])]
    good = render(NPU, UP, [])
    bad = render(NPU, UP, [("npu_chip_info_health_status", "id", "5", "0")])
    pages = {h: {"npu-exporter": good} for h in engines}
    out = status.report(plan, reported(plan, pages))
    assert out["problems"] == []
    rows = {(r[0], r[1]): r for r in out["rows"]}
    assert all(rows[(h, "npu-exporter")][-1] == "8 healthy" for h in engines)
    assert all(rows[(h, "node-exporter")][-1] == "-" for h in engines)
    pages[engines[1]] = {"npu-exporter": bad}
    out = status.report(plan, reported(plan, pages))
    assert out["problems"] == [
        "%s: NPU 5 is unhealthy (npu-exporter): drain its engine group before it fails requests" % engines[1]
    ]
    # A page that could not be read is a problem too, not a healthy row.
    pages[engines[0]] = {}
    out = status.report(plan, reported(plan, pages))
    assert "%s/npu-exporter: its metrics page could not be read" % engines[0] in out["problems"]
