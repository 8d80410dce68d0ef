# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Extra flags checked against the real programs' flags (plugins/plugin_utils/plan/_cli_flags.py).

The flag lists are the committed data (plugins/plugin_utils/data/cli_flags_*.json); that the data
is what the real programs give is tests/contract/test_cli_flags.py's job.
"""

from __future__ import annotations

import pytest

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _cli_flags as cli_flags
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._cli_flags import check_args

# (program, items): no problem.
GOOD = [
    ("vllm", None),
    ("vllm", []),
    ("vllm", ["--trust-remote-code"]),
    ("vllm", [{"--max-model-len": 131072}, {"--gpu-memory-utilization": "0.9"}]),
    ("vllm", [{"--max_model_len": 4096}, "--enable_expert_parallel"]),  # vLLM turns _ into -
    ("vllm", ["--no-enable-prefix-caching", "--enable-prefix-caching"]),  # a boolean-optional flag
    ("vllm", [{"--no-enable-prefix-caching": None}]),
    ("vllm", [{"--max-model-len": None}, {"--trust-remote-code": False}]),  # drop a profile's flag
    ("vllm", [{"--no-max-model-len": None}, {"--max_model_len": False}]),  # any spelling drops it
    ("vllm", [{"-tp": 8}, {"-dp": 2}, "-O3", {"-O": 3}, "-qfp8"]),
    ("vllm", [{"--compilation-config.cudagraph_mode": "FULL_DECODE_ONLY"}, {"--speculative-config": {"a": 1}}]),
    ("vllm", [{"--limit-mm-per-prompt.image": 2}, {"--compilation_config.mode": 3}]),
    ("vllm", [["--max-model-len", 4096]]),  # a (flag, value) pair, as normalize_args takes
    ("vllm", [{"--max-model-len": "{{ max_model_len }}"}, {"--trust-remote-code": "{{ trc }}"}]),  # templates
    ("vllm", [{"--served-model-name": ["a", "b"]}, {"--middleware": {"$repeat": ["x", "y"]}}]),
    ("vllm-router", ["--vllm-pd-disaggregation", {"--policy": "round_robin"}, {"--prefill": "http://p:8001"}]),
    ("vllm-router", [{"--log-level": "info"}, {"--intra-node-data-parallel-size": 2}]),
    ("vllm-router", [{"--log_level": None}, {"--mini-lb": False}]),  # dropping: any spelling
    ("vllm-router", [{"--worker-urls": True}, {"--request-id-headers": ["x-request-id"]}]),  # nargs *
    ("proxy", [{"--host": "0.0.0.0"}, {"--port": 8000}, {"--prefiller-hosts": ["a", "b"]}]),
    ("proxy", [{"--prefiller-ports": [1, 2]}, {"--decoder-hosts": ["c"]}, {"--decoder-ports": [3]}]),
    ("proxy", [{"--log-level": "DEBUG"}, {"--workers": 4}, {"--max-retries": 5}]),
]

# (program, items, every text that must be in the one problem)
BAD = [
    # unknown flags, with the nearest real one
    ("vllm", ["--max-modl-len"], ["--max-modl-len", "not a vllm flag", "nearest: --max-model-len"]),
    ("vllm", ["--tensor-paralel-size"], ["nearest: --tensor-parallel-size"]),
    ("vllm", ["--kimi-k3-no-such-flag"], ["--kimi-k3-no-such-flag", "not a vllm flag", "nearest:"]),
    ("vllm-router", ["--polcy"], ["not a vllm-router flag", "nearest: --policy"]),
    ("vllm-router", ["--prefil-policy"], ["nearest: --prefill-policy"]),
    ("proxy", ["--prefiler-hosts"], ["not a proxy flag", "nearest: --prefiller-hosts"]),
    ("proxy", ["--hots"], ["nearest: --host"]),
    # abbreviations: a unique prefix (argparse would complete it)
    ("vllm", ["--max-model"], ["--max-model", "abbreviation of --max-model-len"]),
    ("vllm", [{"--tensor-parallel": 8}], ["abbreviation of --tensor-parallel-size"]),
    ("vllm", ["--trust-remote"], ["abbreviation of --trust-remote-code"]),
    ("vllm", [{"-t": 8}], ["-t", "abbreviation of -tp"]),
    ("vllm", [{"--max_model": 8}], ["--max_model", "abbreviation of --max-model-len"]),
    ("vllm-router", ["--vllm-pd"], ["abbreviation of --vllm-pd-disaggregation"]),
    ("vllm-router", [{"--intra-node": 2}], ["abbreviation of --intra-node-data-parallel-size"]),
    ("proxy", [{"--prefiller-port": [1]}], ["abbreviation of --prefiller-ports"]),
    ("proxy", [{"--work": 2}], ["abbreviation of --workers"]),
    # ambiguous prefixes (argparse would refuse them)
    ("vllm", [{"--max-num": 8}], ["ambiguous prefix", "--max-num-batched-tokens", "--max-num-seqs"]),
    ("vllm", [{"--data-parallel": 8}], ["ambiguous prefix", "--data-parallel-size"]),
    ("vllm-router", [{"--prefill": None}, {"--kv-penalty": 1}], ["ambiguous prefix", "--kv-penalty-host"]),
    ("proxy", [{"--prefiller": ["a"]}], ["ambiguous prefix", "--prefiller-hosts", "--prefiller-ports"]),
    # underscores: vllm-router and the proxy are plain argparse, they do not take them
    ("vllm-router", [{"--log_level": "info"}], ["--log_level", "does not take underscores", "--log-level"]),
    ("vllm-router", ["--vllm_pd_disaggregation"], ["write --vllm-pd-disaggregation"]),
    ("proxy", [{"--prefiller_hosts": ["a"]}], ["--prefiller_hosts", "does not take underscores", "--prefiller-hosts"]),
    # --no-X only where the program has it
    ("vllm", ["--no-max-model-len"], ["vllm has no --no-max-model-len", "{--max-model-len: null}"]),
    ("vllm", ["--no-headless"], ["vllm has no --no-headless", "{--headless: null}"]),  # a store_true flag
    ("vllm-router", ["--no-mini-lb"], ["vllm-router has no --no-mini-lb", "{--mini-lb: null}"]),
    ("proxy", ["--no-host"], ["proxy has no --no-host"]),
    # dropping needs a real flag all the same
    ("vllm", [{"--max-model": None}], ["abbreviation of --max-model-len"]),
    ("vllm", [{"--no-such-flag-at-all": None}], ["not a vllm flag"]),
    # values
    ("vllm", ["--max-model-len"], ["--max-model-len needs a value"]),
    ("vllm", [{"--trust-remote-code": "yes"}], ["--trust-remote-code takes no value", "'yes'"]),
    ("vllm", [{"--enable-expert-parallel": 1}], ["takes no value"]),
    ("vllm-router", ["--policy"], ["--policy needs a value"]),
    ("vllm-router", [{"--vllm-pd-disaggregation": "true"}], ["takes no value"]),
    ("proxy", ["--port"], ["--port needs a value"]),
    ("vllm", ["--compilation-config.mode"], ["needs a value"]),
    ("vllm", [{"--host.name": "x"}], ["--host takes no --host.KEY form"]),
    ("vllm", [{"--max-modl-len.x": 1}], ["not a vllm flag", "nearest: --max-model-len"]),
    ("vllm", [{"-qfp8": "x"}], ["already holds its value"]),
    ("vllm", [{"-O3": 1}], ["already holds its value"]),
    # one text for flag and value
    ("vllm", ["--max-model-len=4096"], ["as a mapping {--max-model-len: VALUE}"]),
    ("vllm", ["--max-model-len 4096"], ["as a mapping {--max-model-len: VALUE}"]),
    ("vllm-router", ["--polcy=x"], ["as a mapping", "nearest: --policy"]),
    # help
    ("vllm", ["--help"], ["print its help"]),
    ("proxy", ["-h"], ["print its help"]),
]

# Shapes that are not an args list: a problem, never an exception.
SHAPES = [
    3,
    1.5,
    True,
    "--trust-remote-code",
    {"--trust-remote-code": True},
    [None],
    [3],
    [[1, 2, 3]],
    [["--a"]],
    [{}],
    [{"--a": 1, "--b": 2}],
    [{1: 2}],
    [{None: None}],
    [{(1, 2): 3}],
    ["trust-remote-code"],
    ["-"],
    ["--"],
    [""],
    [[["--x", 1]]],
    [{"--x": {"y": [1, {"z": None}]}}],
    [object()],
    [b"--trust-remote-code"],
    [set()],
]

# Values of any kind: never an exception (values are the planner's to render).
ODD_VALUES = [object(), set(), b"x", 1.5, -1, [None, [1]], {"a": {"b": None}}, {"$repeat": None}, float("nan")]


def ids(cases):
    return ["%s-%d" % (case[0], i) for i, case in enumerate(cases)]


@pytest.mark.parametrize(("program", "items"), GOOD, ids=ids(GOOD))
def test_good_flags(program, items):
    assert check_args(program, items) == []


@pytest.mark.parametrize(("program", "items", "texts"), BAD, ids=ids(BAD))
def test_bad_flags(program, items, texts):
    problems = check_args(program, items)
    assert len(problems) == 1, problems
    for text in texts:
        assert text in problems[0], problems[0]


@pytest.mark.parametrize("program", cli_flags.PROGRAMS)
@pytest.mark.parametrize("items", SHAPES, ids=[type(s).__name__ + str(i) for i, s in enumerate(SHAPES)])
def test_bad_shapes_are_problems(program, items):
    problems = check_args(program, items)
    assert problems
    assert all(isinstance(p, str) and p.startswith(cli_flags.ARGS_VARIABLES[program]) for p in problems)


@pytest.mark.parametrize("program", cli_flags.PROGRAMS)
@pytest.mark.parametrize("value", ODD_VALUES, ids=[type(v).__name__ + str(i) for i, v in enumerate(ODD_VALUES)])
def test_odd_values_never_raise(program, value):
    for flag in ("--host", "--help", "--no-host", "--ho", "--host_x", "--host.x", "-O3", "-qx", "--host=1"):
        assert isinstance(check_args(program, [{flag: value}]), list)


@pytest.mark.parametrize("program", [None, "", "vllm serve", "router", 3, ["vllm"], {"a": 1}])
def test_unknown_program_is_a_problem(program):
    problems = check_args(program, ["--trust-remote-code"])
    assert len(problems) == 1
    assert "unknown program" in problems[0]


def test_problem_names_where_and_each_bad_flag():
    problems = check_args(
        "vllm", ["--trust-remote-code", "--max-model", {"--polcy": 1}, 7], where="hosts[n1].k3_vllm_args"
    )
    assert len(problems) == 3
    assert all(p.startswith("hosts[n1].k3_vllm_args: ") for p in problems)
    assert "each item is a flag" in problems[0]  # shapes first
    assert "--max-model is an abbreviation of --max-model-len" in problems[1]
    assert "--polcy is not a vllm flag" in problems[2]


@pytest.mark.parametrize(
    ("program", "flag", "nearest"),
    [
        ("vllm", "--max-modl-len", "--max-model-len"),
        ("vllm", "--gpu-memory-utilisation", "--gpu-memory-utilization"),
        ("vllm", "--enable_expert_paralel", "--enable-expert-parallel"),
        ("vllm", "--served-model", "--served-model-name"),
        ("vllm-router", "--worker-url", "--worker-urls"),
        ("vllm-router", "--kv-conector", "--kv-connector"),
        ("proxy", "--decoder-host", "--decoder-hosts"),
        ("proxy", "--loglevel", "--log-level"),
    ],
)
def test_nearest_flags(program, flag, nearest):
    assert cli_flags.nearest_flags(program, flag)[0] == nearest


def test_nearest_flags_always_names_one():
    assert len(cli_flags.nearest_flags("proxy", "--zzzzzzzz")) == 1


def test_known_flags():
    vllm = cli_flags.known_flags("vllm")
    assert vllm == sorted(vllm)
    for flag in ("--max-model-len", "--tensor-parallel-size", "-tp", "--enable-prefix-caching"):
        assert flag in vllm
    assert "--no-enable-prefix-caching" in vllm
    assert "--no-max-model-len" not in vllm
    router = cli_flags.known_flags("vllm-router")
    assert {"--vllm-pd-disaggregation", "--prefill", "--decode", "--policy", "--host", "--port"} <= set(router)
    assert not any(f.startswith("--no-") for f in router)
    proxy = cli_flags.known_flags("proxy")
    assert {"--host", "--port", "--prefiller-hosts", "--prefiller-ports", "--decoder-hosts", "--decoder-ports"} <= set(
        proxy
    )
    with pytest.raises(ValueError):
        cli_flags.known_flags("nope")


@pytest.mark.parametrize("program", cli_flags.PROGRAMS)
def test_data_headers(program):
    data = cli_flags.program_data(program)
    header = data["header"]
    assert header["program"] == program
    assert header["version"]
    assert header["generated_by"].startswith("tools/gen_cli_flags.py")
    assert set(data["flags"].values()) <= {"none", "optional", "required"}
    assert all(flag.startswith("-") for flag in data["flags"])


def test_pinned_versions():
    assert cli_flags.program_data("vllm")["header"]["version"] == "0.32.0"
    assert cli_flags.program_data("vllm-router")["header"]["version"] == "0.1.17"
    upstream = cli_flags.program_data("proxy")["header"]["upstream"]
    assert upstream["repository"] == "vllm-project/vllm-ascend"
    assert upstream["path"].endswith("/load_balance_proxy_server_example.py")
    assert len(upstream["commit"]) == 40


@pytest.mark.parametrize("program", cli_flags.PROGRAMS)
def test_every_known_flag_passes_with_a_fitting_value(program):
    kinds = cli_flags.program_data(program)["flags"]
    items = [
        {flag: "1"} if kind == "required" else flag for flag, kind in kinds.items() if flag not in ("-h", "--help")
    ]
    assert check_args(program, items) == []
