"""Golden: the variants of ascend-a3-mixed (k3_variant) are the tutorial's reconfigured four-node services.

- ``performance``: 003 section 8.2, "Performance Service Configuration". Node 0 runs exactly the
  ``vllm serve`` the section prints (tests/golden/spec/a3_perf_node0.sh); the workers run
  5.1.1's worker command with the section's table applied.
- ``toolcall``: 003 section 7.5, "Run ToolCall/KVVV". 5.1.1's node 0 and worker commands with
  the section's table applied, on every node.

The tables are parsed from verbatim copies of the sections' text (a3_perf_table.txt,
a3_toolcall_table.txt; test_spec_fidelity proves they still are the spec's), so the variant data
in profiles/ascend-a3-mixed.yml cannot drift from them: every table row is a flag the variant
changes to the table's value, and nothing else of the argv or the environment changes.
"""

from __future__ import annotations

import copy
import functools

import pytest
from conftest import EXAMPLES, inventory_input, service
from spec_runner import assert_same_argv, expected_env_from_plan, run_script, spec_run, spec_text

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _planner as planner
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._profiles import argv_flags, flag_key, load_profile

NODE0_IP = "198.51.100.11"
HOSTS = ["a3-n0", "a3-n1", "a3-n2", "a3-n3"]
# variant -> (its section's table, the table's header as the spec prints it)
TABLES = {
    "performance": ("a3_perf_table.txt", ["Parameter", "Standard deployment", "Performance test"]),
    "toolcall": ("a3_toolcall_table.txt", ["Parameter", "Standard mixed deployment", "ToolCall validation"]),
}
VARIANTS = sorted(TABLES)


def spec_table(variant):
    """The section's table as [(flag, standard value, variant value)], checked against its header."""
    filename, header = TABLES[variant]
    rows = [line.split("\t") for line in spec_text(filename).splitlines() if line.count("\t") == 2]
    assert rows and rows[0] == header, "the table of %s is not where it was: %r" % (filename, rows[:1])
    out = []
    for flag, standard, value in rows[1:]:
        assert flag.startswith("`--") and flag.endswith("`"), flag
        out.append((flag.strip("`"), standard, value))
    assert out, "no rows under the header of %s" % filename
    return out


def table_edits(variant):
    """The table as edits of a 5.1.1 command block: ``--flag <standard> \\`` -> ``--flag <value> \\``."""
    return [("%s %s \\\n" % (f, old), "%s %s \\\n" % (f, new)) for f, old, new in spec_table(variant)]


@functools.cache
def plan(variant=None, **overrides):
    inv = copy.deepcopy(inventory_input(str(EXAMPLES / "a3-mixed-4node" / "hosts.yml")))
    for data in inv["hostvars"].values():  # as all.vars would set it
        data.update(overrides)
        if variant is not None:
            data["k3_variant"] = variant
    return planner.build_plan(inv)


def engine(variant, host, **overrides):
    return service(plan(variant, **overrides), host, "engine")


# --------------------------------------------------------------------------
# The tables are the variants' data
# --------------------------------------------------------------------------
@pytest.mark.parametrize("variant", VARIANTS)
def test_the_spec_table_is_the_variant(variant):
    """Every row: the standard plan has the Standard column, the variant's plan the variant's, on every node."""
    rows = spec_table(variant)
    declared = load_profile("ascend-a3-mixed")["variants"][variant]["parameters"]
    assert len(declared) == len(rows), "the variant changes %s, the table %s" % (sorted(declared), rows)
    for host in HOSTS:
        standard, changed = argv_flags(engine(None, host)["argv"]), argv_flags(engine(variant, host)["argv"])
        for flag, was, value in rows:
            assert standard[flag_key(flag)] == was, (host, flag)
            assert changed[flag_key(flag)] == value, (host, flag)


@pytest.mark.parametrize("variant", VARIANTS)
def test_only_the_table_changes(variant):
    """Standard and variant argv differ exactly in the table's values (same flags, same order); env is the same."""
    rows = spec_table(variant)
    for host in HOSTS:
        standard, changed = engine(None, host), engine(variant, host)
        diff = [(a, b) for a, b in zip(standard["argv"], changed["argv"], strict=True) if a != b]
        assert sorted(diff) == sorted((was, value) for _flag, was, value in rows), (host, diff)
        put_back = list(changed["argv"])
        for flag, was, value in rows:
            at = put_back.index(flag) + 1
            assert put_back[at] == value
            put_back[at] = was
        assert put_back == standard["argv"], host
        assert changed["env"] == standard["env"], host
        for key in ("ports", "after", "after_started", "ranks", "serves_http", "health", "image", "container"):
            assert changed[key] == standard[key], (host, key)


# --------------------------------------------------------------------------
# The commands the sections give
# --------------------------------------------------------------------------
def test_performance_node0_is_section_8_2_command():
    """Node 0 runs the master-node command of 8.2 flag for flag, with 5.1.1's node 0 environment."""
    svc = engine("performance", "a3-n0")
    want = spec_run("a3_perf_node0.sh", NODE0_IP, NODE0_IP, 0)
    assert_same_argv(svc["argv"], want["argv"])
    # 8.2 prints the command only: its environment is 5.1.1's node 0 one.
    assert expected_env_from_plan(svc) == spec_run("a3_mixed_node0.sh", NODE0_IP, NODE0_IP, 0)["env"]
    assert "--headless" not in svc["argv"] and "--data-parallel-start-rank" not in svc["argv"]


def test_section_8_2_command_is_5_1_1_with_its_table():
    """The two readings of 8.2 agree: its printed command is 5.1.1's node 0 command with its table applied."""
    printed = spec_run("a3_perf_node0.sh", NODE0_IP, NODE0_IP, 0)["argv"]
    edited = spec_run("a3_mixed_node0.sh", NODE0_IP, NODE0_IP, 0, table_edits("performance"))["argv"]
    assert_same_argv(printed, edited)


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_node_is_5_1_1_with_the_table(variant):
    """Node 0 and the workers: 5.1.1's blocks with the table applied; workers keep --headless and their rank."""
    for rank, host in enumerate(HOSTS):
        svc = engine(variant, host)
        ip = "198.51.100.%d" % (11 + rank)
        fixture = "a3_mixed_node0.sh" if rank == 0 else "a3_mixed_worker.sh"
        want = spec_run(fixture, ip, NODE0_IP, rank, table_edits(variant))
        assert_same_argv(svc["argv"], want["argv"])
        assert expected_env_from_plan(svc) == want["env"]
        flags = argv_flags(svc["argv"])
        if rank:
            assert "--headless" in svc["argv"], host
            assert flags["data-parallel-start-rank"] == str(rank), host
            assert flags["data-parallel-address"] == NODE0_IP, host
        for flag, _was, value in spec_table(variant):
            assert flags[flag_key(flag)] == value, (host, flag)


def test_toolcall_four_values_on_every_node():
    """7.5: --max-num-seqs 4, --max-model-len 286720, --max-num-batched-tokens 8192, --gpu-memory-utilization 0.97."""
    want = {
        "max-num-seqs": "4",
        "max-model-len": "286720",
        "max-num-batched-tokens": "8192",
        "gpu-memory-utilization": "0.97",
    }
    assert {flag_key(f): v for f, _was, v in spec_table("toolcall")} == want
    for host in HOSTS:
        flags = argv_flags(engine("toolcall", host)["argv"])
        assert {k: flags[k] for k in want} == want, host


# --------------------------------------------------------------------------
# What the plan records
# --------------------------------------------------------------------------
@pytest.mark.parametrize("variant", VARIANTS)
def test_the_plan_records_the_variant(variant):
    got = plan(variant)
    title = load_profile("ascend-a3-mixed")["variants"][variant]["title"]
    assert got["profile"] == "ascend-a3-mixed" and got["variant"] == variant
    assert got["title"] == "%s; %s" % (plan()["title"], title)
    for pname, value in load_profile("ascend-a3-mixed")["variants"][variant]["parameters"].items():
        assert got["parameters"][pname] == value, pname
    files = planner.plan_files(got)
    assert files["summary.txt"].startswith("profile: ascend-a3-mixed, variant %s (" % variant)
    for host in HOSTS:
        script = files["scripts/%s/engine.sh" % host]
        assert script.splitlines()[1].startswith(
            "# kimi_k3.serving plan: profile ascend-a3-mixed, variant %s," % variant
        )
        ran = run_script(script, programs=("vllm",))
        assert ran["argv"] == engine(variant, host)["argv"], host


def test_the_standard_plan_records_no_variant():
    for got in (plan(), plan(k3_variant=None)):
        assert got["variant"] is None
        assert got["title"] == load_profile("ascend-a3-mixed")["title"]
        assert "variant" not in planner.plan_files(got)["summary.txt"].splitlines()[0]
    assert plan(k3_variant=None)["hosts"] == plan()["hosts"]


def test_the_inventory_still_wins_over_the_variant():
    """k3_<name> overrides the variant's value as it overrides the profile's default; the other values stay."""
    flags = argv_flags(engine("toolcall", "a3-n2", k3_max_num_seqs=8)["argv"])
    assert flags["max-num-seqs"] == "8"
    assert (flags["max-model-len"], flags["gpu-memory-utilization"]) == ("286720", "0.97")
