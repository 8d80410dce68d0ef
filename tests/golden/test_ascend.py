"""Golden: the Ascend examples reproduce the vLLM-Ascend tutorial's node 0 and worker commands.

The expected argv/env come from running the tutorial's own blocks (copied byte
for byte in tests/golden/spec/) with a recording stand-in for vllm, the
placeholders replaced by the example inventory's values.
"""

from __future__ import annotations

import shlex

import pytest
from conftest import example_plan, service
from spec_runner import assert_same_argv, expected_env_from_plan, spec_run, spec_text

CASES = [
    # example, fixture prefix, nodes, network, edits from the tutorial's tables
    ("a3-mixed-4node", "a3_mixed", 4, "198.51.100", ()),
    (
        "a3-mixed-1m-8node",
        "a3_mixed",
        8,
        "198.51.100",
        (
            ("--data-parallel-size 4", "--data-parallel-size 8"),
            ("--max-model-len 131072", "--max-model-len 1048576"),
            ("--max-num-batched-tokens 24576", "--max-num-batched-tokens 8192"),
        ),
    ),
    ("a2-mixed-8node", "a2_mixed", 8, "203.0.113", ()),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_node0_and_workers_match_tutorial(case):
    name, prefix, nodes, net, edits = case
    plan = example_plan(name)
    hosts = list(plan["hosts"])
    assert len(hosts) == nodes
    node0_ip = "%s.11" % net
    for rank, host in enumerate(hosts):
        svc = service(plan, host, "engine")
        ip = "%s.%d" % (net, 11 + rank)
        fixture = "%s_node0.sh" % prefix if rank == 0 else "%s_worker.sh" % prefix
        want = spec_run(fixture, ip, node0_ip, rank, edits)
        assert_same_argv(svc["argv"], want["argv"])
        assert expected_env_from_plan(svc) == want["env"]
        assert (svc.get("shell") or {}).get("source", []) == want["sourced"]
        assert svc["ranks"]["dp_start_rank"] == rank
        # Node 0 first, then its followers (once node 0 has started: it is healthy only when they joined).
        assert svc["after"] == []
        assert svc["after_started"] == ([] if rank == 0 else ["%s/engine" % hosts[0]])
        assert svc["serves_http"] is (rank == 0)


def docker_run_options(fixture):
    tokens = shlex.split(spec_text(fixture).replace("\\\n", " "))
    opts = {"devices": [], "volumes": []}
    i = 2
    while i < len(tokens):
        tok = tokens[i]
        if tok == "--device":
            opts["devices"].append(tokens[i + 1])
            i += 2
        elif tok == "-v":
            opts["volumes"].append(tokens[i + 1])
            i += 2
        elif tok.startswith("--shm-size="):
            opts["shm_size"] = tok.split("=", 1)[1]
            i += 1
        elif tok.startswith("--net="):
            opts["network"] = tok.split("=", 1)[1]
            i += 1
        elif tok.startswith("--privileged="):
            opts["privileged"] = tok.split("=", 1)[1] == "true"
            i += 1
        else:
            i += 1
    return opts


@pytest.mark.parametrize(
    "name,fixture,image",
    [
        ("a3-mixed-4node", "a3_docker_run.sh", "quay.io/ascend/vllm-ascend:kimi-k3-a3"),
        ("a2-mixed-8node", "a2_docker_run.sh", "quay.io/ascend/vllm-ascend:kimi-k3"),
    ],
)
def test_container_matches_tutorial_docker_run(name, fixture, image):
    plan = example_plan(name)
    want = docker_run_options(fixture)
    for data in plan["hosts"].values():
        svc = data["services"][0]
        c = svc["container"]
        assert svc["image"] == image
        assert c["devices"] == want["devices"]
        assert c["volumes"] == want["volumes"]
        assert (c["shm_size"], c["network"], c["privileged"]) == (want["shm_size"], want["network"], want["privileged"])
