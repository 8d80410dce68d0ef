"""The exporters in the plan: the node exporter on every host, the platform's on every accelerator host.

Planner tables, no hosts. Every example inventory, given a monitoring host, plans its platform's
exporter on each host that runs an engine and the node exporter on every host, scraped with the
labels the hardware alerts name (``k3_host``); the firewall opens their ports to the monitoring
hosts and the admin networks only; a port that collides is refused naming the variable.
"""

from __future__ import annotations

import copy
import re

import pytest
from conftest import EXAMPLES, example_names, inventory_input
from test_plan_monitoring import inventory

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability import _exporters as exporters
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability import _hardware_rules as hardware
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations import _firewall as firewall
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations import _unit_files as unit_files
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations import _units as units
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _plan_schema as plan_schema
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _planner as planner

VENDOR = {"blackwell": "dcgm-exporter", "rocm": "device-metrics-exporter", "ascend": "npu-exporter"}
WATCHER = "203.0.113.10"


def watched(name, **extra):
    inv = copy.deepcopy(inventory_input(str(EXAMPLES / name / "hosts.yml")))
    inv["groups"]["monitoring"] = ["k3-mon"]
    inv["hostvars"]["k3-mon"] = {"ansible_host": WATCHER}
    for host in inv["hostvars"]:
        inv["hostvars"][host].update(extra)
    return inv


# What the service_unit role passes to the unit files (its defaults).
SETTINGS = {"config_dir": "/etc/kimi-k3", "state_dir": "/var/lib/kimi-k3", "path": [], "extra_env": {}}
SETTINGS.update(limits={}, docker="/usr/bin/docker")


def exporters_of(plan, host):
    return {s["name"]: s for s in plan["hosts"][host]["services"] if s["kind"] == "exporter"}


@pytest.mark.parametrize("name", example_names())
def test_every_example_plans_its_platforms_exporter_on_each_engine_host_and_scrapes_it(name):
    plan = planner.build_plan(watched(name))
    vendor = VENDOR[plan["platform"]]
    targets = {(t["job"], t["host"]): t for t in plan["monitoring"]["targets"]}
    for host, data in plan["hosts"].items():
        planned = exporters_of(plan, host)
        engines = any(s["kind"] == "vllm" for s in data["services"])
        assert set(planned) == ({exporters.NODE, vendor} if engines else {exporters.NODE}), host
        node = targets[("node", host)]
        assert node["address"] == "%s:%d" % (data["ip"], exporters.NODE_PORT)
        assert node["labels"]["k3_host"] == host
        if engines:
            accelerator = targets[("accelerator", host)]
            assert accelerator["address"] == "%s:%d" % (data["ip"], exporters.ACCELERATORS[plan["platform"]]["port"])
            assert planned[vendor]["runtime"] == "docker" and planned[vendor]["image"]
    assert plan_schema.validate_plan(plan) == []


@pytest.mark.parametrize("name", example_names())
def test_without_a_monitoring_host_no_example_plans_an_exporter(name):
    plan = planner.build_plan(inventory_input(str(EXAMPLES / name / "hosts.yml")))
    assert not [s for d in plan["hosts"].values() for s in d["services"] if s["kind"] == "exporter"]


def test_exporters_false_plans_none_and_keeps_the_rest():
    plan = planner.build_plan(watched("nvidia-tp8", k3_exporters=False))
    assert not exporters_of(plan, "gb300-n0")
    assert plan["monitoring"]["targets"]


def test_the_exporter_ports_are_open_to_the_monitoring_host_and_the_admins_only():
    plan = planner.build_plan(watched("nvidia-pd-nixl"))
    host = next(h for h, d in plan["hosts"].items() if any(s["kind"] == "vllm" for s in d["services"]))
    ruleset = firewall.host_rules(plan, host, admin_networks=["192.0.2.200/32"])["ruleset"]
    monitoring = re.search(r"set operators4 \{[^}]*elements = \{ ([^}]*) \}", ruleset).group(1).split(", ")
    assert sorted(monitoring) == sorted([WATCHER, "192.0.2.200", plan["hosts"][host]["ip"]])
    assert 'tcp dport { 9100, 9400 } ip saddr @operators4 accept comment "metrics: monitoring and admins"' in ruleset
    assert "tcp dport { 9100, 9400 } reject with tcp reset" in ruleset
    # The deployment's other hosts reach the serving ports they use, never the exporters'.
    others = [line for line in ruleset.splitlines() if "accept" in line and "operators4" not in line]
    assert not [line for line in others if "9100" in line or "9400" in line]


def test_a_colliding_exporter_port_is_refused_naming_the_variable_and_the_fix():
    with pytest.raises(planner.PlanError) as err:
        planner.build_plan(watched("nvidia-tp8", k3_node_exporter_port=8000))
    text = str(err.value)
    assert "k3_node_exporter_port" in text and "port 8000 is used by" in text and "node-exporter/metrics" in text


def test_a_sites_own_exporter_command_runs_on_the_host_with_its_address_and_port():
    inv = inventory({"k3-sb-mon": "10.77.0.18"})
    for host in inv["hostvars"]:
        inv["hostvars"][host]["k3_accelerator_exporter_command"] = ["/opt/exp", "--listen={ip}:{port}"]
        inv["hostvars"][host]["k3_accelerator_exporter_port"] = 9410
    plan = planner.build_plan(inv)
    engine = exporters_of(plan, "k3-sb-dp0")["accelerator-exporter"]
    assert engine["argv"] == ["/opt/exp", "--listen=10.77.0.12:9410"]
    assert engine["runtime"] == "host" and engine["health"]["url"] == "http://10.77.0.12:9410/metrics"
    # The router's host runs no engine: only the node exporter.
    assert set(exporters_of(plan, "k3-sb-front")) == {exporters.NODE}
    assert plan_schema.validate_plan(plan) == []


def test_host_runtime_runs_the_vendors_program_without_a_container():
    plan = planner.build_plan(watched("nvidia-tp8", k3_runtime="host"))
    dcgm = exporters_of(plan, "gb300-n0")["dcgm-exporter"]
    assert dcgm["runtime"] == "host" and dcgm["image"] is None and dcgm["container"] == {}
    assert dcgm["argv"][-1] == dcgm["files"][0]["path"]


def test_dcgm_exporter_runs_with_the_gpus_and_counters_every_nvidia_alert_reads():
    plan = planner.build_plan(watched("nvidia-tp8"))
    dcgm = exporters_of(plan, "gb300-n0")["dcgm-exporter"]
    line = units.exec_start(dcgm, "docker", "/etc/kimi-k3/dcgm-exporter.env")
    assert line[:2] == ["/usr/bin/docker", "run"]
    for pair in (["--gpus", "all"], ["--cap-add", "SYS_ADMIN"], ["--network", "host"]):
        assert any(line[i : i + 2] == pair for i in range(len(line) - 1)), pair
    assert "-f" in line and exporters.DCGM_COUNTERS_PATH in line
    counters = {row.split(",")[0] for row in dcgm["files"][0]["content"].splitlines() if not row.startswith("#")}
    rules = hardware.hardware_rules("5m", 0.1)["rules"]
    exprs = " ".join(r["expr"] for r in rules)
    # The NVLink counters are read with one pattern: DCGM_FI_DEV_NVLINK_(CRC_FLIT|...)_ERROR_COUNT_TOTAL.
    nvlink = re.search(r"DCGM_FI_DEV_NVLINK_\(([A-Z_|]+)\)(_[A-Z_]+)", exprs)
    read = {n for n in re.findall(r"DCGM_FI_[A-Z_]+", exprs) if not n.endswith("_")}
    read |= {"DCGM_FI_DEV_NVLINK_%s%s" % (kind, nvlink.group(2)) for kind in nvlink.group(1).split("|")}
    # The older name of the clock event reasons is read for older exporters; the new one is collected.
    assert read - counters <= {"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"}, read - counters
    assert "DCGM_FI_DEV_CLOCKS_EVENT_REASONS" in counters


def test_device_metrics_exporter_takes_its_port_from_its_configuration():
    inv = watched("mi355x-tp8-dcp8", k3_accelerator_exporter_port=5400)
    plan = planner.build_plan(inv)
    amd = exporters_of(plan, "mi355x-n0")["device-metrics-exporter"]
    assert amd["files"][0]["content"] == '{"ServerPort": 5400}\n'
    assert amd["argv"][0] == exporters.ROCM_ENTRYPOINT
    assert amd["container"]["devices"] == ["/dev/dri", "/dev/kfd"]


def test_the_exporter_plan_is_not_changed_by_reading_it_twice():
    inv = watched("a3-mixed-4node")
    assert planner.build_plan(copy.deepcopy(inv)) == planner.build_plan(inv)


@pytest.mark.parametrize("name", example_names())
def test_every_planned_file_lies_in_a_folder_the_service_files_make(name):
    """The service_units module writes a planned file only into a folder that exists: the
    configuration folder (made by the same call) or another the host already has."""
    plan = planner.build_plan(watched(name))
    services = [s for d in plan["hosts"].values() for s in d["services"]]
    made = {d["path"] for d in unit_files.service_files(services, SETTINGS)["directories"]}
    for svc in services:
        for item in svc.get("files") or []:
            folder = item["path"].rsplit("/", 1)[0]
            assert folder in made or not folder.startswith("/etc/kimi-k3"), (svc["name"], item["path"])
