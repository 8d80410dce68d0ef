#!/usr/bin/env python3
# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""TEST DOUBLE of the vendors' fabric tools, for the sandbox (no GPU, NPU or RDMA device here).

Installed under each tool's name (tests/doubles/fabric/bin: mpirun, ib_write_bw, ib_read_bw,
ib_write_lat, hccn_tool, each a wrapper that runs this file with its name), it prints a REAL
RECORDED OUTPUT of that tool (tests/unit/fixtures/fabric, sources in its README.md) instead of
measuring anything:

* ``mpirun ... PROGRAM ...``: the recording of PROGRAM's test (all_reduce_perf, alltoall_perf: an
  nccl-tests run, or an rccl-tests run where PROGRAM's path names rccl-tests; all_reduce_test: the
  HCCL test, whose success table no recording has, so that one is built from its documented format
  and says so, tests/doubles/fabric/built);
* perftest: with no server address, the server: it listens on its ``-p`` port (what perftest's
  out-of-band exchange does), takes one client and prints nothing of note; with an address, the
  client: it connects to that address and port for real (a path the firewall blocks fails as
  perftest does, "Couldn't connect to ADDRESS:PORT") and prints the recording;
* ``hccn_tool -i N -link|-net_health|-ping|-ip -g``: the recording of that query.

Which recording: a passing one by default; a test makes a group, pair or NPU fail by naming another
recording in ``/run/k3-fabric-double/choices.json`` (or K3_FABRIC_DOUBLE_CHOICES) on the host that
runs the tool: ``{KEY: FILE}``, FILE relative to tests/unit/fixtures/fabric (or ``built/...`` for
tests/doubles/fabric/built, outputs built from the documented formats), KEY the test
(``all_reduce_perf``, ``ib_write_bw``, ``hccn_tool -ping`` ...), optionally with ``@TARGET`` (the
perftest server's address, the NPU's id) to choose for one pair or NPU only.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RECORDINGS = HERE.parent / "unit" / "fixtures" / "fabric"
BUILT = HERE / "fabric" / "built"
CHOICES = Path(os.environ.get("K3_FABRIC_DOUBLE_CHOICES") or "/run/k3-fabric-double/choices.json")
DEFAULTS = {
    "all_reduce_perf": "nvidia/nccl-tests_all_reduce_perf_16xH100_2node_gcp-a3mega.txt",
    "alltoall_perf": "nvidia/nccl-tests_alltoall_perf_16xRTX6000D_2node_cx8-spectrumx_nccl2.30.3.txt",
    "rccl all_reduce_perf": "amd/rccl-tests_all_reduce_perf_16xMI355X_2node_ainic_rccl2.27.7.txt",
    "rccl alltoall_perf": "amd/rccl-tests_alltoall_perf_16xMI355X_2node_ainic_rccl2.27.7.txt",
    "all_reduce_test": "built/hccl_test_all_reduce_test_success_built-from-format.txt",
    "ib_write_bw": "rdma/ib_write_bw_client_oke-roce_mlx5_4qp-rdma-cm_mofed5.4-perftest.txt",
    "ib_read_bw": "rdma/ib_read_bw_client_edr-ib_mlx5_MB-sec.txt",
    "ib_write_lat": "rdma/ib_write_lat_client_dgx-spark-gb10_cx7-roce-rdma-cm.txt",
    "hccn_tool -link": "ascend/hccn_tool_-link_-g_UP_mindcluster-doc-sample.txt",
    "hccn_tool -net_health": "ascend/hccn_tool_-net_health_-g_Success_mindcluster-doc-sample.txt",
    "hccn_tool -ping": "ascend/hccn_tool_-i3_-ping_-g_address_910B1.txt",
    "hccn_tool -ip": "built/hccn_tool_-ip_-g_sandbox.txt",
}


# perftest's options that take a value (perftest's own usage text).
VALUE_OPTIONS = {
    "-d",
    "--ib-dev",
    "-p",
    "--port",
    "-q",
    "--qp",
    "-s",
    "--size",
    "-n",
    "--iters",
    "-i",
    "--ib-port",
    "-x",
    "--gid-index",
    "-T",
    "--tos",
    "-m",
    "--mtu",
    "-D",
    "--duration",
    "-c",
    "--connection",
    "-u",
    "--qp-timeout",
    "-t",
    "--tx-depth",
    "-I",
    "--inline_size",
    "--tclass",
    "--use_rocm",
}


def choices():
    try:
        return json.loads(CHOICES.read_text())
    except (OSError, ValueError):
        return {}


def recording(key, target=None):
    chosen = choices()
    name = chosen.get("%s@%s" % (key, target)) or chosen.get(key) or DEFAULTS[key]
    path = BUILT / name[len("built/") :] if name.startswith("built/") else RECORDINGS / name
    return path.read_text()


def option(argv, *names):
    for flag, value in zip(argv, argv[1:], strict=False):
        if flag in names:
            return value
    return None


def mpirun(argv):
    tests = ("all_reduce_perf", "alltoall_perf", "all_reduce_test")
    program = next((a for a in argv if a.rsplit("/", 1)[-1] in tests), "")
    test = program.rsplit("/", 1)[-1]
    if not test:
        sys.exit("mpirun (double): no test program in %s" % " ".join(argv))
    key = ("rccl " + test) if "rccl" in program and ("rccl " + test) in DEFAULTS else test
    sys.stdout.write(recording(key if key in DEFAULTS else test))
    return 0


def perftest(test, argv):
    port = int(option(argv, "-p", "--port") or 18515)
    # perftest's client names the server last; the server has no address (a last word that is an
    # option's value is no address).
    last_is_value = len(argv) >= 2 and argv[-2] in VALUE_OPTIONS
    address = argv[-1] if argv and not argv[-1].startswith("-") and not last_is_value else None
    if address is None:
        return serve(port)
    deadline = time.monotonic() + 10
    while True:
        try:
            with socket.create_connection((address, port), timeout=2):
                break
        except OSError:
            if time.monotonic() > deadline:
                print(" Couldn't connect to %s:%d" % (address, port))
                print(" Unable to open file descriptor for socket connection Unable to init the socket connection")
                return 1
            time.sleep(0.2)
    sys.stdout.write(recording(test, address))
    return 0


def serve(port):
    with socket.create_server(("0.0.0.0", port)) as server:
        server.settimeout(120)
        banner = "*" * 36
        print("\n%s\n* Waiting for client to connect... *\n%s" % (banner, banner))
        sys.stdout.flush()
        try:
            conn, _ = server.accept()
            conn.close()
        except TimeoutError:
            return 1
    return 0


def hccn_tool(argv):
    npu = option(argv, "-i")
    query = next((a for a in argv if a in ("-link", "-net_health", "-ping", "-ip")), None)
    if query is None:
        sys.exit("hccn_tool (double): no query in %s" % " ".join(argv))
    sys.stdout.write(recording("hccn_tool " + query, npu))
    return 0


def main():
    # Run as tests/doubles/fabric/bin/TOOL, a wrapper that names the tool first.
    tool, argv = (sys.argv[1], sys.argv[2:]) if len(sys.argv) > 1 else ("", [])
    if tool == "mpirun":
        return mpirun(argv)
    if tool in ("ib_write_bw", "ib_read_bw", "ib_write_lat"):
        return perftest(tool, argv)
    if tool == "hccn_tool":
        return hccn_tool(argv)
    sys.exit("fabric_tools.py (double): run it as one of the tools (tests/doubles/fabric/bin), not as %r" % tool)


if __name__ == "__main__":
    sys.exit(main())
