"""The fabric test tools' outputs (module_utils/fabric_collective.py, fabric_perftest.py, fabric_hccn.py),
read from recordings of real runs (tests/unit/fixtures/fabric/*/, sources in its README.md).

Every recording is a case, its expected figures read off the file. The few cases no recording exists
for (an hccl_test result table, a link that is down, a ping that got no reply) are written inline,
built from the format the tool's source or documentation gives, and say so.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ansible_collections.kimi_k3.serving.plugins.module_utils import fabric_collective, fabric_hccn, fabric_perftest

FIXTURES = Path(__file__).parent / "fixtures" / "fabric"
# The recordings with a test of their own (the others are in the tables below).
LINK_UP = "ascend/hccn_tool_-link_-g_UP_mindcluster-doc-sample.txt"
HCCL_INIT_FAILED = "ascend/hccl_test_all_reduce_test_init-failed-retcode7_cann-oam-tools-faq.txt"
WRITE_LAT = "rdma/ib_write_lat_client_dgx-spark-gb10_cx7-roce-rdma-cm.txt"


def read(name):
    return (FIXTURES / name).read_text(encoding="utf-8")


# ------------------------------------------------------------------------------- nccl-tests / rccl-tests
# name, test, ranks, hosts, rows, first and last size, last busbw out-of-place and in-place, avg busbw.
PASSING_COLLECTIVES = [
    (
        "nvidia/nccl-tests_all_reduce_perf_16xA100-B4.8_2node_nccl2.29.3_ranks-elided_partial.txt",
        "all_reduce_perf",
        16,
        ["inst-e8gjz-oke-rdma", "inst-vfj93-oke-rdma"],
        2,
        (1073741824, 10737418240),
        (191.22, 191.22),
        189.005,
    ),
    (
        "nvidia/nccl-tests_all_reduce_perf_16xA100_2node_oke-sriov-rdma.txt",
        None,
        16,
        ["nccl-allreduce-job0-mpiworker-0", "nccl-allreduce-job0-mpiworker-1"],
        31,
        (8, 8589934592),
        (237.94, 237.52),
        66.4834,
    ),
    (
        "nvidia/nccl-tests_all_reduce_perf_16xH100_2node_gcp-a3mega.txt",
        None,
        16,
        ["ztan-mig-235z", "ztan-mig-gq73"],
        31,
        (8, 8589934592),
        (338.82, 337.35),
        70.742,
    ),
    (
        "nvidia/nccl-tests_all_reduce_perf_16xH100_2node_k8s-mpi-operator_slice.txt",
        None,
        16,
        ["nccl-tests-h100-worker-0", "nccl-tests-h100-worker-1"],
        5,
        (536870912, 8589934592),
        (196.52, 196.51),
        194.675,
    ),
    (
        "nvidia/nccl-tests_alltoall_perf_16xRTX6000D_2node_cx8-spectrumx_nccl2.30.3.txt",
        "alltoall_perf",
        16,
        ["R6KD-CX8aaS-GPU-11", "R6KD-CX8aaS-GPU-12"],
        24,
        (1024, 8589934592),
        (35.90, 38.01),
        9.04853,
    ),
    (
        "amd/rccl-tests_all_reduce_perf_16xMI300X_2node_oke-slurm_ranks-elided_partial.txt",
        "all_reduce_perf",
        16,
        ["inst-ao2dl-oke-rdma", "inst-aq8lt-oke-rdma"],
        5,
        (1073741824, 17179869184),
        (358.37, 358.24),
        354.659,
    ),
    (
        "amd/rccl-tests_all_reduce_perf_16xMI300X_2node_rccl2.22.3.txt",
        None,
        16,
        ["gpu-53", "gpu-56"],
        32,
        (8, 17179869184),
        (357.46, 357.41),
        92.3318,
    ),
    (
        "amd/rccl-tests_all_reduce_perf_16xMI355X_2node_ainic_rccl2.27.7.txt",
        "all_reduce_perf",
        16,
        ["Aliyun1", "Aliyun3"],
        31,
        (16, 17179869184),
        (385.98, 385.95),
        129.28,
    ),
    (
        "amd/rccl-tests_all_reduce_perf_16xMI355X_2node_pollara_rccl2.26.6_partial.txt",
        None,
        16,
        ["mi355-gpu-23", "mi355-gpu-24"],
        31,
        (8, 8589934592),
        (369.04, 369.08),
        None,
    ),
    (
        "amd/rccl-tests_all_reduce_perf_8xMI300X_1node_develop-a7809b3.txt",
        None,
        8,
        ["1942ef50-8240-449e-82ca-4ce7993f70b4-78bfb5d4f4-4z9xh"],
        31,
        (8, 8589934592),
        (315.69, 315.91),
        110.464,
    ),
    (
        "amd/rccl-tests_all_reduce_perf_8xMI355X_1node_rccl2.27.7.txt",
        "all_reduce_perf",
        8,
        ["Aliyun3"],
        29,
        (4, 1073741824),
        (402.55, 401.90),
        105.615,
    ),
    (
        "amd/rccl-tests_alltoall_perf_16xMI355X_2node_ainic_rccl2.27.7.txt",
        "alltoall_perf",
        16,
        ["Aliyun1", "Aliyun3"],
        31,
        (0, 17179869184),
        (91.09, 91.10),
        36.0754,
    ),
    (
        "amd/rccl-tests_alltoall_perf_8xMI355X_1node_rccl2.27.7.txt",
        "alltoall_perf",
        8,
        ["Aliyun3"],
        25,
        (0, 134217728),
        (322.22, 316.42),
        58.3947,
    ),
]


@pytest.mark.parametrize("name, test, ranks, hosts, count, sizes, last_busbw, avg", PASSING_COLLECTIVES)
def test_a_passing_collective_run_gives_its_table(name, test, ranks, hosts, count, sizes, last_busbw, avg):
    found = fabric_collective.parse_collective(read(name))
    assert (found["failed"], found["cause"], found["errors"]) == (False, None, [])
    assert (found["test"], found["ranks"], found["hosts"]) == (test, ranks, hosts)
    rows = found["rows"]
    assert (len(rows), rows[0]["size"], rows[-1]["size"]) == (count, *sizes)
    assert (rows[-1]["busbw"], rows[-1]["ip_busbw"]) == last_busbw
    assert found["avg_busbw"] == avg
    assert found["out_of_bounds"] == (None if avg is None else 0)
    assert all(r["wrong"] == 0 for r in rows)


# name, test, ranks, hosts, rows, out-of-bounds, avg busbw, first error, number of errors, words of the cause.
FAILED_COLLECTIVES = [
    (
        "nvidia/nccl-tests_all_reduce_perf_2xGH200_2node_wrong-FAILED_nccl2.29.2.txt",
        "all_reduce_perf",
        2,
        ["gpu-1-1", "gpu-1-7"],
        25,
        4,
        4.79995,
        ".. gpu-1-1 pid 662195: Test failure common.cu:1189",
        2,
        ["96 wrong values at 1048576 B (out-of-place) and 32 (in-place)", "4 out-of-bounds"],
    ),
    (
        "nvidia/nccl-tests_all_reduce_perf_8xGH200_2node_cuda-busy-FAILED_nccl2.26.6.txt",
        "all_reduce_perf",
        8,
        ["gpu-1-1", "gpu-1-7"],
        0,
        None,
        None,
        "gpu-1-1: Test CUDA failure common.cu:1304 'CUDA-capable device(s) is/are busy or unavailable'",
        8,
        ["CUDA failure", "gpu-1-1", "common.cu:1304", "CUDA-capable device(s) is/are busy or unavailable"],
    ),
    (
        "nvidia/nccl-tests_alltoall_perf_16xH800_2node_illegal-memory-access-FAILED_nccl2.28.7.txt",
        "alltoall_perf",
        16,
        ["node0", "node1"],
        0,
        None,
        None,
        "node0: Test CUDA failure common.cu:389 'an illegal memory access was encountered'",
        7,
        ["CUDA failure", "node0", "an illegal memory access was encountered", "2097152 B row was cut short"],
    ),
]


@pytest.mark.parametrize("name, test, ranks, hosts, count, bounds, avg, error, errors, words", FAILED_COLLECTIVES)
def test_a_failed_collective_run_names_its_cause(name, test, ranks, hosts, count, bounds, avg, error, errors, words):
    found = fabric_collective.parse_collective(read(name))
    assert found["failed"] is True
    assert (found["test"], found["ranks"], found["hosts"], len(found["rows"])) == (test, ranks, hosts, count)
    assert (found["out_of_bounds"], found["avg_busbw"]) == (bounds, avg)
    assert (found["errors"][0], len(found["errors"])) == (error, errors)
    assert [w for w in words if w not in found["cause"]] == [], found["cause"]


def test_the_row_with_wrong_values_keeps_both_counts():
    rows = fabric_collective.parse_collective(
        read("nvidia/nccl-tests_all_reduce_perf_2xGH200_2node_wrong-FAILED_nccl2.29.2.txt")
    )["rows"]
    assert [(r["size"], r["wrong"], r["ip_wrong"]) for r in rows if r["wrong"] or r["ip_wrong"]] == [(1048576, 96, 32)]


def test_every_column_of_a_row_and_na_as_none():
    first = fabric_collective.parse_collective(
        read("nvidia/nccl-tests_alltoall_perf_16xRTX6000D_2node_cx8-spectrumx_nccl2.30.3.txt")
    )["rows"][0]
    assert first == {
        "size": 1024,
        "count": 16,
        "type": "float",
        "redop": "none",
        "root": -1,
        "time_us": 55.66,
        "algbw": 0.02,
        "busbw": 0.02,
        "wrong": 0,
        "ip_time_us": 29.21,
        "ip_algbw": 0.04,
        "ip_busbw": 0.03,
        "ip_wrong": None,
    }


def test_the_uncut_rows_of_a_run_with_noise_lines_are_all_read():
    # kubectl's and ssh's lines before the table; the in-place time "100.1" in the 2 MiB row.
    rows = fabric_collective.parse_collective(
        read("nvidia/nccl-tests_all_reduce_perf_16xA100_2node_oke-sriov-rdma.txt")
    )["rows"]
    assert [(r["size"], r["ip_time_us"]) for r in rows if r["size"] == 2097152] == [(2097152, 100.1)]
    assert [r["size"] for r in rows] == [2**n for n in range(3, 34)]


@pytest.mark.parametrize(
    "name, size, expected",
    [
        ("nvidia/nccl-tests_all_reduce_perf_16xH100_2node_gcp-a3mega.txt", 1073741824, (1073741824, 297.86)),
        ("nvidia/nccl-tests_all_reduce_perf_16xH100_2node_gcp-a3mega.txt", 3 * 2**30, (2147483648, 318.40)),
        ("nvidia/nccl-tests_all_reduce_perf_16xH100_2node_gcp-a3mega.txt", 2**40, (8589934592, 338.82)),
        (
            "nvidia/nccl-tests_all_reduce_perf_16xA100-B4.8_2node_nccl2.29.3_ranks-elided_partial.txt",
            8589934592,
            (1073741824, 186.67),
        ),
        # Four rows of size 0 (8-64 B over 8 ranks): the last one printed.
        ("amd/rccl-tests_alltoall_perf_8xMI355X_1node_rccl2.27.7.txt", 100, (0, 0.00)),
    ],
)
def test_row_at_takes_the_size_or_the_largest_below(name, size, expected):
    row = fabric_collective.row_at(fabric_collective.parse_collective(read(name))["rows"], size)
    assert (row["size"], row["busbw"]) == expected


def test_row_at_the_last_of_repeated_sizes_and_nothing_below_the_smallest():
    rows = fabric_collective.parse_collective(read("amd/rccl-tests_alltoall_perf_8xMI355X_1node_rccl2.27.7.txt"))[
        "rows"
    ]
    assert fabric_collective.row_at(rows, 64)["time_us"] == 0.72
    gcp = fabric_collective.parse_collective(read("nvidia/nccl-tests_all_reduce_perf_16xH100_2node_gcp-a3mega.txt"))
    assert fabric_collective.row_at(gcp["rows"], 4) is None


def test_an_output_without_a_table_is_a_failure():
    found = fabric_collective.parse_collective('Defaulted container "mpimaster" out of: mpimaster\n')
    assert (found["failed"], found["cause"], found["rows"], found["ranks"]) == (
        True,
        "no result table in the output",
        [],
        0,
    )


# --------------------------------------------------------------------------------------------- hccl_test
def test_hccl_test_init_failure_names_the_retcode_and_the_step():
    found = fabric_collective.parse_hccl_test(read(HCCL_INIT_FAILED))
    assert (found["failed"], found["rows"]) == (True, [])
    assert found["errors"] == [
        "hccl interface return err ./common/src/hccl_test_common.cc:538, retcode: 7",
        "This is an error in init_hcclComm.",
    ]
    assert "retcode 7" in found["cause"] and "init_hcclComm" in found["cause"]


# Built from the documented format, not a recording: the header and row printf formats of
# HcclOpBaseTest::print_execution_time, hicann/oam-tools src/hccl_test/common/src/hccl_opbase_rootinfo_base.cc
# @ ea0ce91e3a326ab6ae8a7c2caf88701343288f2b: "%-15s | %-12s | %-18s | %s\n" for the header (its labels
# are longer than the widths) and "%-17llu | %-14.2f | %-20.5f | success\n" (or failed, NULL) for a row; the
# first line is the root rank's "the minbytes is %llu, ..." of hccl_test_common.cc.
HCCL_SUCCESS = """the minbytes is 8192, maxbytes is 1073741824, iters is 20, warmup_iters is 5
data_size(Bytes): | aveg_time(us): | alg_bandwidth(GB/s): | check_result:
8192              | 29.85          | 0.27444              | success
1048576           | 61.33          | 17.09728             | success
134217728         | 1012.47        | 132.56465            | success
1073741824        | 7489.52        | 143.36591            | success
"""
# A failing rank's own line, then the root's row (built from the same function's printf formats).
HCCL_RANK_FAILED = """data_size(Bytes): | aveg_time(us): | alg_bandwidth(GB/s): | check_result:
local rank_id 3, check result failed, 65536             | 40.12          | 1.63350              | failed
65536             | 40.12          | 1.63350              | success
"""
HCCL_ROOT_FAILED = """data_size(Bytes): | aveg_time(us): | alg_bandwidth(GB/s): | check_result:
8192              | 29.85          | 0.27444              | success
65536             | 40.12          | 1.63350              | failed
"""
# -c 0 (or a data type that would overflow): no check, NULL.
HCCL_UNCHECKED = """Warning: The calculation result overflows, No verification is performed.
data_size(Bytes): | aveg_time(us): | alg_bandwidth(GB/s): | check_result:
8192              | 31.02          | 0.26409              | NULL
"""


def test_hccl_test_table_built_from_its_printf_formats():
    """Built from hccl_test's source (hicann/oam-tools src/hccl_test/common/src/hccl_opbase_rootinfo_base.cc
    @ ea0ce91e3a326ab6ae8a7c2caf88701343288f2b, print_execution_time), not a recording."""
    found = fabric_collective.parse_hccl_test(HCCL_SUCCESS)
    assert (found["failed"], found["cause"], found["errors"]) == (False, None, [])
    assert [(r["size"], r["check"]) for r in found["rows"]] == [
        (8192, "success"),
        (1048576, "success"),
        (134217728, "success"),
        (1073741824, "success"),
    ]
    assert found["rows"][-1] == {"size": 1073741824, "time_us": 7489.52, "algbw": 143.36591, "check": "success"}


@pytest.mark.parametrize(
    "text, failed, cause",
    [
        (HCCL_ROOT_FAILED, True, "check_result failed at 65536 B"),
        (HCCL_RANK_FAILED, True, "check_result failed at 65536 B on rank 3"),
        (HCCL_UNCHECKED, False, None),
    ],
)
def test_hccl_test_check_results_built_from_its_printf_formats(text, failed, cause):
    """Built from hccl_test's print_execution_time formats (see above), not recordings."""
    found = fabric_collective.parse_hccl_test(text)
    assert (found["failed"], found["cause"]) == (failed, cause)
    assert found["rows"]


# --------------------------------------------------------------------------------------------- perftest
# name, test, device, link type, qps, bidirectional, rows, first and last bytes, last peak, avg, msg rate.
PERFTEST_BW = [
    (
        "rdma/ib_write_bw_client_oke-roce_mlx5_4qp-rdma-cm_mofed5.4-perftest.txt",
        "ib_write_bw",
        "mlx5_5",
        "Ethernet",
        4,
        False,
        (1, 65536, 65536),
        (98.01, 98.01, 0.186932),
    ),
    (
        "rdma/ib_write_bw_server_bidir-gdr-rocm_mi355x_ionic-ainic_-a.txt",
        "ib_write_bw",
        "ionic_1",
        "Ethernet",
        4,
        True,
        (23, 2, 8388608),
        (698.41, 697.97, 0.010401),
    ),
    (
        "rdma/ib_write_bw_client_bidir-gdr-rocm_mi355x_ionic-ainic_-a.txt",
        "ib_write_bw",
        "ionic_1",
        "Ethernet",
        4,
        True,
        (23, 2, 8388608),
        (698.41, 697.97, 0.010401),
    ),
    (
        "rdma/ib_write_bw_client_bidir-host-mem_mi355x-node_ionic-ainic_-a.txt",
        "ib_write_bw",
        "ionic_1",
        "Ethernet",
        4,
        True,
        (23, 2, 8388608),
        (779.21, 779.21, 0.011611),
    ),
    (
        "rdma/ib_write_bw_client_dgx-spark-gb10_cx7-roce_run-infinitely_partial.txt",
        "ib_write_bw",
        "roceP2p1s0f0",
        "Ethernet",
        1,
        False,
        (6, 65536, 65536),
        (0.00, 97.28, 0.185554),
    ),
    (
        "rdma/ib_write_bw_client_dgx-spark-gb10_cx7-roce_4qp-rdma-cm.txt",
        "ib_write_bw",
        "rocep1s0f1",
        "IB",
        4,
        False,
        (1, 65536, 65536),
        (111.72, 111.71, 0.213070),
    ),
    # MB/sec: perftest's MB is 2**20 bytes (format_factor 0x100000, print_report_bw in linux-rdma/perftest
    # src/perftest_parameters.c), so the printed 11709.18 and 11708.31 MB/sec are * 2**20 * 8 / 1e9 Gbit/s.
    (
        "rdma/ib_read_bw_client_edr-ib_mlx5_MB-sec.txt",
        "ib_read_bw",
        "mlx5_0",
        "IB",
        1,
        False,
        (1, 65536, 65536),
        (
            pytest.approx(11709.18 * 2**20 * 8 / 1e9, abs=1e-3),
            pytest.approx(11708.31 * 2**20 * 8 / 1e9, abs=1e-3),
            0.187333,
        ),
    ),
]


@pytest.mark.parametrize("name, test, device, link, qps, bidir, table, last", PERFTEST_BW)
def test_a_perftest_bandwidth_run_gives_its_table_in_gbits(name, test, device, link, qps, bidir, table, last):
    found = fabric_perftest.parse_perftest(read(name))
    assert (found["failed"], found["cause"], found["errors"]) == (False, None, [])
    assert (found["test"], found["kind"], found["device"], found["link_type"]) == (test, "bw", device, link)
    assert (found["qps"], found["bidirectional"]) == (qps, bidir)
    rows = found["rows"]
    assert (len(rows), rows[0]["bytes"], rows[-1]["bytes"]) == table
    assert (rows[-1]["peak_gbps"], rows[-1]["avg_gbps"], rows[-1]["msg_rate_mpps"]) == last


def test_the_smallest_size_keeps_its_six_decimals_and_both_sides_print_one_table():
    server = fabric_perftest.parse_perftest(read("rdma/ib_write_bw_server_bidir-gdr-rocm_mi355x_ionic-ainic_-a.txt"))
    client = fabric_perftest.parse_perftest(read("rdma/ib_write_bw_client_bidir-gdr-rocm_mi355x_ionic-ainic_-a.txt"))
    assert server["rows"][0] == {
        "bytes": 2,
        "iterations": 20000,
        "peak_gbps": 0.147580,
        "avg_gbps": 0.146905,
        "msg_rate_mpps": 9.181552,
    }
    assert server["rows"] == client["rows"]


def test_a_perftest_latency_run_gives_its_table_in_microseconds():
    found = fabric_perftest.parse_perftest(read(WRITE_LAT))
    assert (found["failed"], found["cause"], found["errors"]) == (False, None, [])
    assert (found["test"], found["kind"], found["device"], found["link_type"]) == (
        "ib_write_lat",
        "lat",
        "rocep1s0f1",
        "IB",
    )
    assert (found["qps"], found["bidirectional"]) == (1, False)
    assert found["rows"] == [
        {
            "bytes": 2,
            "iterations": 1000,
            "t_min": 1.42,
            "t_max": 1.93,
            "t_typical": 1.47,
            "t_avg": 1.47,
            "t_stdev": 0.00,
            "p99": 1.57,
            "p999": 1.93,
        }
    ]


# Built from perftest's source, not a recording: the MiB/sec labels perftest prints since 2024 (RESULT_FMT
# in src/perftest_parameters.h) and a row in its REPORT_FMT (" %-7lu    %-10lu       %-7.2lf ...").
PERFTEST_MIB = """---------------------------------------------------------------------------------------
                    RDMA_Read BW Test
 #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]
 65536      5000             11701.25            11698.40\t\t     0.187174
---------------------------------------------------------------------------------------
"""
# Built from the messages perftest's source prints when the server cannot be reached
# (src/perftest_communication.c, src/write_bw.c), not a recording.
PERFTEST_UNREACHABLE = """Couldn't connect to 10.0.0.2:18515
Unable to open file descriptor for socket connection
 Unable to init the socket connection
"""


def test_mib_per_second_is_converted_like_mb_per_second():
    row = fabric_perftest.parse_perftest(PERFTEST_MIB)["rows"][0]
    assert row["avg_gbps"] == pytest.approx(11698.40 * 2**20 * 8 / 1e9, abs=1e-3)


def test_a_perftest_run_that_cannot_connect_fails_with_perftest_s_words():
    found = fabric_perftest.parse_perftest(PERFTEST_UNREACHABLE)
    assert (found["failed"], found["cause"], found["rows"], found["test"]) == (
        True,
        "Couldn't connect to 10.0.0.2:18515",
        [],
        None,
    )
    assert len(found["errors"]) == 3


# --------------------------------------------------------------------------------------------- hccn_tool
def test_link_up():
    assert fabric_hccn.parse_link(read(LINK_UP)) == {
        "status": "UP",
        "failed": False,
        "cause": None,
    }


def test_link_down_built_from_the_documented_format():
    # Built from the documented format ("link status: DOWN", Ascend/mind-cluster
    # component/ascend-common/devmanager/hccn/hccn_tool.go), not a recording: none was found.
    assert fabric_hccn.parse_link("link status: DOWN\n") == {
        "status": "DOWN",
        "failed": True,
        "cause": "link status is DOWN",
    }


NET_HEALTH = [
    ("ascend/hccn_tool_-net_health_-g_Success_mindcluster-doc-sample.txt", "Success", None),
    (
        "ascend/hccn_tool_-net_health_-g_Init_mindcluster-doc-sample.txt",
        "Init",
        "net health status is Init (the port was never probed: no netdetect address is set)",
    ),
    (
        "ascend/hccn_tool_-net_health_-g_Fault_after-link-down_mindcluster-doc-sample.txt",
        "Fault",
        "net health status is Fault",
    ),
    (
        "ascend/hccn_tool_-i0_-net_health_-g_Socket-failed_910A_faultdiag-test-fixture.txt",
        "Socket failed",
        "net health status is Socket failed",
    ),
]


@pytest.mark.parametrize("name, status, cause", NET_HEALTH)
def test_net_health(name, status, cause):
    assert fabric_hccn.parse_net_health(read(name)) == {"status": status, "failed": cause is not None, "cause": cause}


PINGS = [
    ("ascend/hccn_tool_-i3_-ping_-g_address_910B1.txt", [3], "29.1.137.205", [1.418, 0.034, 0.040]),
    (
        "ascend/hccn_tool_-i0-7_-ping_-g_address_loop_a2-910B3.txt",
        [0, 1, 2, 3, 4, 5, 6, 7],
        "11.12.165.80",
        [0.114, 0.067, 0.063],
    ),
]


@pytest.mark.parametrize("name, devices, address, first_times", PINGS)
def test_ping_blocks(name, devices, address, first_times):
    found = fabric_hccn.parse_ping(read(name))
    assert [e["device"] for e in found] == devices
    assert {(e["address"], e["transmitted"], e["received"], e["loss_percent"], e["failed"]) for e in found} == {
        (address, 3, 3, 0.0, False)
    }
    assert found[0]["times_ms"] == first_times
    assert all(e["cause"] is None and len(e["times_ms"]) == 3 for e in found)


def test_the_last_block_of_a_loop_is_its_own():
    last = fabric_hccn.parse_ping(read("ascend/hccn_tool_-i0-7_-ping_-g_address_loop_a2-910B3.txt"))[-1]
    assert (last["device"], last["times_ms"]) == (7, [0.157, 0.065, 0.063])


# Built from the format of the recordings above (the summary line as Linux ping words it), not a
# recording: no failed hccn_tool ping was found.
PING_UNANSWERED = """device 5 PING 10.0.0.1
3 packets transmitted, 0 received, 100.00% packet loss
"""
PING_CUT_OFF = """device 2 PING 10.0.0.1
recv seq=0,time=0.114000ms
"""


def test_an_unanswered_ping_built_from_the_format():
    (found,) = fabric_hccn.parse_ping(PING_UNANSWERED)
    assert (found["device"], found["transmitted"], found["received"], found["loss_percent"]) == (5, 3, 0, 100.0)
    assert (found["failed"], found["times_ms"]) == (True, [])
    assert found["cause"] == "device 5: 0 of 3 packets to 10.0.0.1 answered (100.00% loss)"


def test_a_ping_without_its_summary_built_from_the_format():
    (found,) = fabric_hccn.parse_ping(PING_CUT_OFF)
    assert (found["failed"], found["transmitted"], found["times_ms"]) == (True, None, [0.114])
    assert found["cause"] == "device 2: no ping summary for 10.0.0.1"


# --------------------------------------------------------------------------------------------- the set
TABLES = [PASSING_COLLECTIVES, FAILED_COLLECTIVES, PERFTEST_BW, NET_HEALTH, PINGS]


def test_every_recording_is_a_case_and_listed_in_the_readme():
    recorded = sorted(str(p.relative_to(FIXTURES)) for p in FIXTURES.glob("*/*") if p.parent.name != "net")
    tested = {case[0] for table in TABLES for case in table} | {LINK_UP, HCCL_INIT_FAILED, WRITE_LAT}
    assert sorted(tested) == recorded
    readme = read("README.md")
    listed = set(re.findall(r"^- `([^`]+)`", readme, re.MULTILINE))
    assert {p.name for p in FIXTURES.glob("*/*")} <= listed
