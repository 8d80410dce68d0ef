"""The fabric check's vendor tools (plugin_utils/operations/_fabric_tools.py, _fabric_judge.py,
module_utils/fabric_runner.py): which tool runs where for every platform, the steps, and what the
recorded real outputs (tests/unit/fixtures/fabric) mean against the thresholds of the data file."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, example_plan
from test_plan_schema import sandbox_plan

from ansible_collections.kimi_k3.serving.plugins.module_utils import fabric_runner
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._fabric import fabric_plan
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations import _fabric as fabric
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations import _fabric_judge as judge
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations import _fabric_tools as tools

FIXTURES = Path(__file__).parent / "fixtures" / "fabric"
BUILT = ROOT / "tests" / "doubles" / "fabric" / "built"
DOUBLES = ROOT / "tests" / "doubles" / "fabric" / "bin"
TCP = {"fabric_port": 5201, "fabric_tcp_seconds": 3, "fabric_tcp_streams": 4, "fabric_tcp_min_gbps": 5}


def prepared(name, hosts=None, addresses=None, **settings):
    plan = sandbox_plan("sandbox-cpu") if name == "sandbox" else example_plan(name)
    return fabric.prepare(plan, dict(TCP, **settings), hosts, addresses)["tools"]


def runs_of(found):
    """(host, parser, argv) of every command the steps run, servers included."""
    out = []
    for step in found["steps"]:
        for part in ("serve", "run"):
            for host, runs in step[part].items():
                out.extend((part, host, r["parser"], r["argv"]) for r in runs)
    return out


# ------------------------------------------------------------------------------------------ what runs where
def test_an_nvl72_group_runs_nccl_tests_from_its_first_host_across_every_gpu():
    found = prepared("nvidia-dep16")
    assert (found["platform"], found["interconnect"]) == ("blackwell", "nvlink")
    assert [(c["test"], c["subject"], c["host"]) for c in found["checks"]] == [
        ("all_reduce_perf", "group gb300-n0/engine", "gb300-n0"),
        ("alltoall_perf", "group gb300-n0/engine", "gb300-n0"),
    ]
    argv = runs_of(found)[0][3]
    # In the planned engine image, with the engines' container options; mpirun over both nodes' 16 GPUs.
    assert argv[:2] == ["docker", "run"] and "--gpus" in argv and "vllm/vllm-openai:kimi-k3" in argv
    tail = argv[argv.index("vllm/vllm-openai:kimi-k3") + 1 :]
    assert tail[:6] == ["--allow-run-as-root", "-np", "16", "-H", "192.0.2.51:8,192.0.2.52:8", "--bind-to"]
    assert tail[-9:] == ["/opt/nccl-tests/build/all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", "1"]
    # The engines' NCCL settings reach every rank (the MNNVL ones of the NVLink profile among them).
    assert ["-x", "NCCL_SOCKET_IFNAME=eth0", "-x", "GLOO_SOCKET_IFNAME=eth0", "-x", "NCCL_CUMEM_ENABLE=1"] == tail[7:13]
    assert "NCCL_MNNVL_ENABLE=1" in tail and "NCCL_NVLS_ENABLE=1" in tail
    # Over NVLink the group's ring is no RDMA path: no perftest.
    assert not [c for c in found["checks"] if c["kind"] == "rdma"]


def test_the_same_group_over_rdma_adds_perftest_both_ways_rail_by_rail():
    found = prepared("nvidia-dep16", fabric_interconnect="rdma", fabric_rdma_devices=["mlx5_0", "mlx5_1"])
    rdma = [c for c in found["checks"] if c["kind"] == "rdma"]
    assert len(rdma) == 2 * 3 * 2  # two directions, three tests, two rails
    write = [c for c in rdma if c["test"] == "ib_write_bw" and c["subject"].startswith("gb300-n0 -> gb300-n1")]
    assert [(c["host"], c["server"], c["subject"]) for c in write] == [
        ("gb300-n0", "gb300-n1", "gb300-n0 -> gb300-n1 (mlx5_0 -> mlx5_0)"),
        ("gb300-n0", "gb300-n1", "gb300-n0 -> gb300-n1 (mlx5_1 -> mlx5_1)"),
    ]
    # ib_read_bw reads the data towards its client: the client sits where the data goes.
    read = [c for c in rdma if c["test"] == "ib_read_bw" and c["subject"].startswith("gb300-n0 -> gb300-n1")]
    assert {(c["host"], c["server"]) for c in read} == {("gb300-n1", "gb300-n0")}


def test_mi355x_kv_path_runs_perftest_on_each_planned_hca_with_a_port_each():
    found = prepared("mi355x-pd-1p1d-c8")
    assert found["platform"] == "rocm" and not [c for c in found["checks"] if c["kind"] == "collective"]
    step = found["steps"][0]
    assert step["label"] == "rdma round 1: ib_write_bw"
    served = step["serve"]["mi355x-d1"]
    ran = step["run"]["mi355x-p1"]
    assert len(served) == len(ran) == 8
    for index, (server, client) in enumerate(zip(served, ran, strict=True)):
        rail = "rdma%d" % index
        port = str(tools.RDMA_PORT + index)
        for argv in (server["argv"], client["argv"]):
            assert "--device" in argv and "/dev/infiniband" in argv and "--entrypoint" in argv
            tail = argv[argv.index("vllm/vllm-openai-rocm:nightly") + 1 :]
            assert tail[:4] == ["-d", rail, "-p", port]
        assert client["argv"][-1] == "192.0.2.12" and server["argv"][-1] == "4"
    assert [s["label"] for s in found["steps"]] == [
        "rdma round 1: ib_write_bw",
        "rdma round 1: ib_read_bw",
        "rdma round 1: ib_write_lat",
    ]


def test_nixl_without_a_device_list_runs_perftest_on_its_default_device():
    found = prepared("nvidia-pd-nixl")
    kv = [c for c in found["checks"] if c["kind"] == "rdma"]
    assert kv and all("(" not in c["subject"] for c in kv)
    argvs = [argv for part, _host, _parser, argv in runs_of(found)]
    assert all("-d" not in argv[argv.index("--entrypoint") :] for argv in argvs)


def test_ascend_reads_the_npu_addresses_first_then_checks_and_pings_every_npu():
    plan = example_plan("a2-mixed-8node")
    first = prepared("a2-mixed-8node")
    assert [c["test"] for c in first["checks"]] == ["all_reduce_test"]
    assert sorted(first["address_runs"]) == sorted(plan["hosts"])
    address = first["address_runs"]["a2-n0"][3]
    # hccn_tool is the host's own tool (the tutorial mounts it into the containers): run on the host.
    assert address["argv"] == ["/usr/local/Ascend/driver/tools/hccn_tool", "-i", "3", "-ip", "-g"]
    addresses = {h: {n: "29.1.%d.%d" % (k, n) for n in range(8)} for k, h in enumerate(plan["hosts"])}
    addresses["a2-n1"][5] = None
    found = prepared("a2-mixed-8node", addresses=addresses)
    hccn = [c for c in found["checks"] if c["kind"] == "hccn"]
    # Link and health of every NPU; along the ring's 8 pairs, every NPU to every NPU of the next host.
    assert len(hccn) == 8 * 8 * 2 + 8 * 8 * 8
    ping = next(c for c in hccn if c["name"] == "hccn ping a2-n0 -> a2-n1 npu 2 -> 7")
    assert ping["host"] == "a2-n0" and ping["why"] == ["engine group a2-n0/engine (8 hosts)"]
    runs = {r["name"]: r for r in found["steps"][-1]["run"]["a2-n0"]}
    assert runs["hccn ping a2-n0 -> a2-n1 npu 2 -> 7"]["argv"] == [
        "/usr/local/Ascend/driver/tools/hccn_tool", "-i", "2", "-ping", "-g", "address", "29.1.1.7",
    ]  # fmt: skip
    missing = next(c for c in hccn if c["name"] == "hccn ping a2-n0 -> a2-n1 npu 3 -> 5")
    assert missing["error"] == "NPU 5 of a2-n1 has no network address (hccn_tool -i 5 -ip -g printed none)"
    assert "hccn ping a2-n0 -> a2-n1 npu 3 -> 5" not in runs
    # Rail by rail only: NPU N to NPU N.
    rail = prepared("a2-mixed-8node", addresses=addresses, fabric_hccn_pings="rail")
    pings = [c["name"] for c in rail["checks"] if c["test"] == "hccn_tool -ping" and c["host"] == "a2-n0"]
    assert pings == ["hccn ping a2-n0 -> a2-n1 npu %d -> %d" % (n, n) for n in range(8)]
    hccl = runs_of(found)[0][3]
    assert hccl[hccl.index("--entrypoint") + 1] == "mpirun" and "-n" in hccl and "64" in hccl
    # The engines' HCCL settings go to every rank, but not node 0's own address.
    assert "HCCL_INTRA_ROCE_ENABLE=1" in hccl and "HCCL_BUFFSIZE=256" in hccl
    assert not [a for a in hccl if a.startswith("HCCL_IF_IP=")]


def test_address_results_as_the_hosts_report_them_become_the_ping_targets():
    results = [{"name": "hccn address h npu %d" % n, "parsed": {"address": "10.0.0.%d" % n}} for n in (1, 0)]
    assert tools.npu_addresses({"h": results}) == {"h": {1: "10.0.0.1", 0: "10.0.0.0"}}
    assert tools.npu_addresses({"h": {"3": "10.0.0.3"}}) == {"h": {3: "10.0.0.3"}}


def test_the_sandbox_runs_its_doubles_as_an_nvidia_rdma_cluster():
    found = prepared(
        "sandbox",
        fabric_platform="blackwell",
        fabric_interconnect="rdma",
        fabric_devices_per_node=2,
        fabric_rdma_devices=["mlx5_0", "mlx5_1"],
        fabric_tools={"launcher": [str(DOUBLES / "mpirun"), "-np", "{ranks}", "-H", "{hosts}"]},
    )
    runs = runs_of(found)
    # The host runtime: the commands as they are, no container.
    assert runs[0] == (
        "run",
        "k3-sb-dp0",
        "collective",
        [str(DOUBLES / "mpirun"), "-np", "4", "-H", "10.77.0.12:2,10.77.0.13:2"]
        + ["/opt/nccl-tests/build/all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", "1"],
    )
    assert len([r for r in runs if r[0] == "serve"]) == 2 * 3 * 2


def test_no_host_is_in_two_groups_or_pairs_of_a_step():
    for name in ("a3-pd-8p8d", "mi355x-pd-1p2d-c24", "nvidia-dep16"):
        found = prepared(name, fabric_interconnect="rdma", addresses={})
        for step in found["steps"]:
            if step["label"] == "NPU network":
                continue
            checks = {c["name"]: c for c in found["checks"]}
            pairs = {checks[r["name"]]["subject"].split(" (")[0] for runs in step["run"].values() for r in runs}
            hosts = [h for subject in pairs for h in _hosts_of(subject, checks)]
            assert len(hosts) == len(set(hosts)), (name, step["label"])


def _hosts_of(subject, checks):
    return next(c["hosts"] for c in checks.values() if c["subject"].split(" (")[0] == subject)


def test_replacements_for_another_platforms_tools_are_left_aside():
    found = prepared(
        "nvidia-dep16",
        fabric_tools={"hccn": {"program": "/x/hccn_tool"}, "rdma": {"ib_write_bw": {"program": "/x/ib"}}},
    )
    assert [c["test"] for c in found["checks"]] == ["all_reduce_perf", "alltoall_perf"]
    assert found["address_runs"] == {}


def test_a_limit_keeps_only_the_groups_and_pairs_it_holds_whole():
    found = prepared("nvidia-dep16", hosts=["gb300-n0"])
    assert found["checks"] == [] and found["steps"] == []


def test_without_a_platform_or_with_the_tools_off_only_the_tcp_floor_runs():
    assert prepared("sandbox")["checks"] == []
    assert prepared("nvidia-dep16", fabric_vendor_tools=False)["checks"] == []
    assert prepared("nvidia-dep16", fabric_vendor_tools="false")["checks"] == []


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"fabric_platform": "tpu"}, "fabric_platform 'tpu' has no fabric tools; use one of ascend, blackwell, rocm"),
        ({"fabric_interconnect": "ethernet"}, "fabric_interconnect must be rdma or nvlink, not 'ethernet'"),
        ({"fabric_hccn_pings": "some"}, "fabric_hccn_pings must be all or rail, not 'some'"),
        ({"fabric_devices_per_node": "eight"}, "fabric_devices_per_node must be a whole number above 0, not 'eight'"),
        ({"fabric_tools": ["mpirun"]}, "fabric_tools must be a mapping, not ['mpirun']"),
        (
            {"fabric_tools": {"launcher": ["mpirun", "-np", "{gpus}"]}},
            "unknown placeholder {gpus} in '{gpus}' (fabric_tools)",
        ),
        (
            {"fabric_tools": {"launcher": "mpirun -np 16"}},
            "fabric_tools: launcher must be a list of arguments, not 'mpirun -np 16'",
        ),
        (
            {"fabric_tools": {"collectives": {"all_reduce_perf": {"program": None}}}},
            "fabric_tools: collectives.all_reduce_perf needs a program (a path or a name)",
        ),
        (
            {"fabric_platform": "ascend", "fabric_tools": {"hccn": {"ping": "-ping"}}},
            "fabric_tools: hccn.ping must be a list of arguments, not '-ping'",
        ),
    ],
)
def test_a_bad_setting_is_refused_naming_it(settings, message):
    with pytest.raises(fabric.FabricError) as err:
        prepared("nvidia-dep16", **settings)
    assert str(err.value) == message
    # Through the filter, the same sentence (as a task would show it).
    with pytest.raises(Exception) as err:  # noqa: PT011 - the filter's own error type, whatever Ansible names it
        fabric_plan(example_plan("nvidia-dep16"), dict(TCP, **settings))
    assert message in str(err.value)


def test_every_placeholder_of_the_data_file_is_one_the_planner_fills():
    known = {"ranks", "hosts", "devices", "nic", "device", "port", "npu", "address"}
    for platform, entry in tools.catalog()["tools"].items():
        text = repr(entry)
        assert set(tools._PLACEHOLDER.findall(text)) <= known, platform


# ---------------------------------------------------------------------------------- the results, judged
def parsed(parser, name):
    path = BUILT / name[6:] if name.startswith("built/") else FIXTURES / name
    text = path.read_text(encoding="utf-8")
    # As the host's runner reads a tool's output (exit 0).
    return dict(fabric_runner.read_output(parser, text), rc=0)


SETTINGS = {"thresholds": tools.catalog()["thresholds"], "line_rate_gbps": 100.0}
GCP = "nvidia/nccl-tests_all_reduce_perf_16xH100_2node_gcp-a3mega.txt"
OKE = "nvidia/nccl-tests_all_reduce_perf_16xA100_2node_oke-sriov-rdma.txt"
RTX = "nvidia/nccl-tests_alltoall_perf_16xRTX6000D_2node_cx8-spectrumx_nccl2.30.3.txt"
MI355X_A2A = "amd/rccl-tests_alltoall_perf_16xMI355X_2node_ainic_rccl2.27.7.txt"
WRITE = "rdma/ib_write_bw_client_oke-roce_mlx5_4qp-rdma-cm_mofed5.4-perftest.txt"
READ = "rdma/ib_read_bw_client_edr-ib_mlx5_MB-sec.txt"
LAT = "rdma/ib_write_lat_client_dgx-spark-gb10_cx7-roce-rdma-cm.txt"


def check(kind, test, platform="blackwell", interconnect="rdma", **extra):
    base = {"name": "%s x" % test, "kind": kind, "test": test, "subject": "group n0/engine", "host": "n0"}
    return dict(base, why=["engine group n0/engine (2 hosts)"], platform=platform, interconnect=interconnect, **extra)


# kind, test, platform, interconnect, parser, recording, settings, passed, figure, cause (a part of it)
JUDGED = [
    ("collective", "all_reduce_perf", "blackwell", "rdma", "collective", GCP, {}, True, 338.82, None),
    (
        "collective", "all_reduce_perf", "blackwell", "rdma", "collective", OKE, {}, False, 237.94,
        "bus bandwidth 237.94 GB/s at 8 GiB, below the threshold 270 GB/s",
    ),
    (
        "collective", "all_reduce_perf", "blackwell", "nvlink", "collective", GCP, {}, False, 338.82,
        "bus bandwidth 338.82 GB/s at 8 GiB, below the threshold 540 GB/s",
    ),
    ("collective", "alltoall_perf", "blackwell", "rdma", "collective", RTX, {}, True, 35.9, None),
    ("collective", "alltoall_perf", "rocm", "rdma", "collective", MI355X_A2A, {}, True, 91.09, None),
    # The RTX recording stops at 8 GiB: read at the largest size below rocm's 16 GiB.
    (
        "collective", "alltoall_perf", "rocm", "rdma", "collective", RTX, {}, False, 35.9,
        "bus bandwidth 35.9 GB/s at 8 GiB, below the threshold 70 GB/s",
    ),
    (
        "collective", "all_reduce_perf", "blackwell", "rdma", "collective",
        "nvidia/nccl-tests_all_reduce_perf_2xGH200_2node_wrong-FAILED_nccl2.29.2.txt", {}, False, None, "wrong",
    ),
    (
        "collective", "all_reduce_perf", "blackwell", "rdma", "collective",
        "nvidia/nccl-tests_all_reduce_perf_8xGH200_2node_cuda-busy-FAILED_nccl2.26.6.txt", {}, False, None,
        "busy or unavailable",
    ),
    (
        "collective", "alltoall_perf", "blackwell", "rdma", "collective",
        "nvidia/nccl-tests_alltoall_perf_16xH800_2node_illegal-memory-access-FAILED_nccl2.28.7.txt", {}, False,
        None, "illegal memory access",
    ),
    (
        "hccl", "all_reduce_test", "ascend", "rdma", "hccl",
        "built/hccl_test_all_reduce_test_success_built-from-format.txt", {}, True, 144.09582, None,
    ),
    (
        "hccl", "all_reduce_test", "ascend", "rdma", "hccl",
        "ascend/hccl_test_all_reduce_test_init-failed-retcode7_cann-oam-tools-faq.txt", {}, False, None, "retcode 7",
    ),
    ("rdma", "ib_write_bw", "blackwell", "rdma", "perftest", WRITE, {}, True, 98.01, None),
    (
        "rdma", "ib_write_bw", "blackwell", "rdma", "perftest", WRITE, {"line_rate_gbps": 400.0}, False, 98.01,
        "average bandwidth 98.01 Gbit/s at 64 KiB, below the threshold 320 Gbit/s",
    ),
    ("rdma", "ib_read_bw", "rocm", "rdma", "perftest", READ, {}, True, 98.216, None),
    ("rdma", "ib_write_lat", "blackwell", "rdma", "perftest", LAT, {}, True, 1.47, None),
    (
        "rdma", "ib_write_lat", "blackwell", "rdma", "perftest", LAT,
        {"thresholds": tools.merged(tools.catalog()["thresholds"], {"rdma": {"ib_write_lat": {"max_usec": 1}}})},
        False, 1.47, "typical latency 1.47 us at 2 B, above the threshold 1 us",
    ),
    (
        "hccn", "hccn_tool -link", "ascend", "rdma", "hccn_link",
        "ascend/hccn_tool_-link_-g_UP_mindcluster-doc-sample.txt", {}, True, None, None,
    ),
    (
        "hccn", "hccn_tool -link", "ascend", "rdma", "hccn_link", "built/hccn_tool_-link_-g_DOWN_built-from-format.txt",
        {}, False, None, "DOWN",
    ),
    (
        "hccn", "hccn_tool -net_health", "ascend", "rdma", "hccn_net_health",
        "ascend/hccn_tool_-net_health_-g_Fault_after-link-down_mindcluster-doc-sample.txt", {}, False, None, "Fault",
    ),
    (
        "hccn", "hccn_tool -net_health", "ascend", "rdma", "hccn_net_health",
        "ascend/hccn_tool_-i0_-net_health_-g_Socket-failed_910A_faultdiag-test-fixture.txt", {}, False, None,
        "Socket failed",
    ),
    ("hccn", "hccn_tool -ping", "ascend", "rdma", "hccn_ping", "ascend/hccn_tool_-i3_-ping_-g_address_910B1.txt", {},
     True, None, None),
    (
        "hccn", "hccn_tool -ping", "ascend", "rdma", "hccn_ping", "built/hccn_tool_-ping_-g_lost_built-from-format.txt",
        {}, False, None, "device 0: 0 of 3 packets to 10.77.0.13 answered (100.00% loss)",
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("kind", "test", "platform", "interconnect", "parser", "recording", "settings", "passed", "figure", "cause"),
    JUDGED,
    ids=["%s-%s-%s" % (row[1], row[2], Path(row[5]).stem[:40]) for row in JUDGED],
)
def test_a_recorded_result_against_its_threshold(
    kind, test, platform, interconnect, parser, recording, settings, passed, figure, cause
):
    row = judge.judge(check(kind, test, platform, interconnect), parsed(parser, recording), dict(SETTINGS, **settings))
    assert (row["passed"], row["figure"]) == (passed, figure), row
    if cause is None:
        assert row["cause"] is None and "problem" not in row
    else:
        assert cause in row["cause"], row
        # The problem names the test, the group or pair and why the plan connects it.
        assert row["problem"].startswith("%s: group n0/engine (engine group n0/engine (2 hosts)): " % test)


def test_a_missing_tool_fails_unless_it_is_optional_and_a_silent_host_fails():
    missing = {"missing": True, "failed": True, "cause": "/opt/x is not installed on this host", "parsed": None}
    row = judge.judge(check("collective", "all_reduce_perf"), missing, SETTINGS)
    assert not row["passed"] and row["cause"] == "/opt/x is not installed on this host"
    row = judge.judge(check("hccl", "all_reduce_test", "ascend", optional=True), missing, SETTINGS)
    assert row["passed"] and row["skipped"]
    row = judge.judge(check("collective", "all_reduce_perf"), None, SETTINGS)
    assert row["cause"] == "not run (its host did not report)"
    # A ping that printed no block at all: the runner reads it as a failure.
    nothing = fabric_runner.read_output("hccn_ping", "")
    assert nothing == {"parsed": [], "failed": True, "cause": "no result in its output"}
    row = judge.judge(check("hccn", "hccn_tool -ping", "ascend"), nothing, SETTINGS)
    assert not row["passed"] and row["cause"] == "no result in its output"


def test_every_threshold_of_the_data_file_says_where_its_number_comes_from():
    found = tools.catalog()["thresholds"]
    leaves = [
        (path, entry)
        for path, entry in _walk(found, ())
        if isinstance(entry, dict) and {"min_busbw", "min_algbw", "min_share", "max_usec"} & set(entry)
    ]
    assert len(leaves) >= 10
    for path, entry in leaves:
        assert len(entry.get("source", "")) > 40, path
        judge.size_bytes(entry["at"])


def _walk(node, path):
    yield path, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _walk(value, (*path, key))


@pytest.mark.parametrize(
    ("value", "size", "human"),
    [
        ("8G", 8 << 30, "8 GiB"),
        ("16G", 16 << 30, "16 GiB"),
        ("65536", 65536, "64 KiB"),
        ("2", 2, "2 B"),
        ("8K", 8192, "8 KiB"),
    ],
)
def test_message_sizes(value, size, human):
    assert judge.size_bytes(value) == size and judge.human_size(size) == human


def test_the_report_table_and_the_outputs_file():
    found = prepared("nvidia-dep16")
    names = [c["name"] for c in found["checks"]]
    results = {names[0]: dict(parsed("collective", GCP), name=names[0], argv=["mpirun"], output="table\n")}
    done = judge.report(found, results)
    assert [r["passed"] for r in done["rows"]] == [False, False]  # nvlink's floor is above an H100 figure
    assert done["lines"][0].split() == ["TEST", "GROUP", "OR", "PAIR", "FIGURE", "THRESHOLD", "RESULT"]
    assert done["problems"][1].endswith("not run (its host did not report)")
    assert judge.outputs(results.values()) == "=== %s (exit 0)\n$ mpirun\ntable\n\n" % names[0]


# ------------------------------------------------------------------------------------- running them here
def run_command(argv, environ_update=None):
    """What AnsibleModule.run_command does with an argument list, for the runner here."""
    env = dict(os.environ, **(environ_update or {}))
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    return done.returncode, done.stdout, done.stderr


def test_a_command_runs_is_parsed_and_a_missing_or_slow_one_fails(tmp_path):
    cat = fabric_runner.run_one(
        run_command, {"name": "c", "argv": ["cat", str(FIXTURES / GCP)], "parser": "collective"}, 30, {}
    )
    assert cat["failed"] is False and cat["rc"] == 0 and cat["parsed"]["rows"][-1]["busbw"] == 338.82
    gone = fabric_runner.run_one(
        run_command, {"name": "g", "argv": [str(tmp_path / "nope")], "parser": "perftest"}, 30, {}
    )
    assert gone["missing"] and gone["cause"] == "%s is not installed on this host" % (tmp_path / "nope")
    slow = fabric_runner.run_one(run_command, {"name": "s", "argv": ["sleep", "5"], "parser": "perftest"}, 1, {})
    assert slow["failed"] and slow["cause"] == "still running after 1 s: ended"


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_the_perftest_double_serves_and_measures_over_a_real_connection(tmp_path):
    port = free_port()
    work = tmp_path / "run"
    server = {"name": "ib_write_bw s", "argv": [str(DOUBLES / "ib_write_bw"), "-p", str(port)], "parser": "perftest"}
    assert fabric_runner.serve_all([server], str(work)) == ["ib_write_bw s"]
    assert port in fabric_runner.listening_ports()
    client = dict(server, name="ib_write_bw c", argv=[str(DOUBLES / "ib_write_bw"), "-p", str(port), "127.0.0.1"])
    measured = fabric_runner.run_all(run_command, [client], 30)[0]
    assert measured["failed"] is False and measured["parsed"]["rows"][-1]["avg_gbps"] == 98.01
    fabric_runner.stop_all(str(work))
    assert not work.exists()
    # Nothing listens any more: the client fails as perftest does, naming the address and port.
    refused = fabric_runner.run_one(run_command, dict(client, argv=[*client["argv"][:-1], "127.0.0.1"]), 30, {})
    assert refused["failed"] and "Couldn't connect to 127.0.0.1:%d" % port in refused["output"], refused


def test_the_double_prints_a_chosen_failing_recording(tmp_path, monkeypatch):
    choices = tmp_path / "choices.json"
    choices.write_text(
        '{"all_reduce_perf": "nvidia/nccl-tests_all_reduce_perf_2xGH200_2node_wrong-FAILED_nccl2.29.2.txt"}'
    )
    env = dict(os.environ, K3_FABRIC_DOUBLE_CHOICES=str(choices))
    argv = [str(DOUBLES / "mpirun"), "-np", "2", "/opt/nccl-tests/build/all_reduce_perf"]
    done = fabric_runner.run_one(run_command, {"name": "x", "argv": argv, "parser": "collective"}, 30, env)
    assert done["failed"] and "wrong" in done["cause"]
    plain = fabric_runner.run_one(run_command, {"name": "x", "argv": argv, "parser": "collective"}, 30, {})
    assert plain["failed"] is False and plain["parsed"]["rows"][-1]["busbw"] == 338.82
