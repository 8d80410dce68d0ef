"""How planned services become systemd units (plugins/plugin_utils/operations/_units.py)."""

from __future__ import annotations

import shlex

import pytest
from conftest import example_plan, service

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations import _units as units


def unquote_exec(line):
    """Undo systemd's ExecStart quoting the way systemd does for our quoted words."""
    words = []
    for word in shlex.split(line.replace("$$", "$").replace("%%", "%"), posix=True):
        words.append(word)
    return words


def test_host_runtime_is_the_argv_itself():
    svc = service(example_plan("nvidia-tp8"), "gb300-n0", "engine")
    line = units.exec_line(svc, "host", "/etc/kimi-k3/engine.env")
    assert unquote_exec(line) == svc["argv"]
    # JSON arguments survive the quoting.
    assert '"{\\"use_prefill_query_quantization\\":true,' in line


def test_docker_runtime_wraps_with_the_planned_container():
    svc = service(example_plan("mi355x-pd-1p1d-c48"), "mi355x-p1", "prefill")
    argv = units.exec_start(svc, "docker", "/etc/kimi-k3/prefill.env")
    assert argv[:5] == ["/usr/bin/docker", "run", "--rm", "--name", "k3-prefill"]
    image = argv.index("vllm/vllm-openai-rocm:nightly")
    assert argv[image - 2 : image] == ["--entrypoint", "vllm"]
    assert argv[image + 1 :] == svc["argv"][1:]
    opts = argv[5:image]
    for pair in (
        ["--network", "host"],
        ["--device", "/dev/kfd"],
        ["--device", "/dev/infiniband"],
        ["--security-opt", "seccomp=unconfined"],
        ["--group-add", "video"],
        ["--ulimit", "memlock=-1:-1"],
        ["--env-file", "/etc/kimi-k3/prefill.env"],
    ):
        assert any(opts[i : i + 2] == pair for i in range(len(opts) - 1)), pair
    # Environment never travels in argv.
    assert not any(a.startswith("NCCL_") or "-e" == a for a in argv)


def test_shell_setup_runs_through_bash():
    svc = service(example_plan("a2-mixed-8node"), "a2-n1", "engine")
    argv = units.exec_start(svc, "host", "/etc/kimi-k3/engine.env")
    assert argv[:2] == ["/bin/bash", "-c"]
    assert "source /usr/local/Ascend/ascend-toolkit/set_env.sh" in argv[2]
    assert 'export PYTHONPATH=/vllm-workspace/vllm-ascend:"${PYTHONPATH:-}"' in argv[2]
    assert argv[2].endswith('exec "$@"')
    assert argv[4:] == svc["argv"]
    docker = units.exec_start(svc, "docker", "/etc/kimi-k3/engine.env")
    assert docker[docker.index("--entrypoint") + 1] == "/bin/bash"


def test_docker_without_image_refused():
    svc = {"name": "x", "unit": "k3-x", "argv": ["vllm", "serve", "m"], "image": None}
    with pytest.raises(units.UnitError, match="no image"):
        units.exec_start(svc, "docker", "/e")
    with pytest.raises(units.UnitError, match="unknown runtime"):
        units.exec_start(svc, "podman-ish", "/e")


@pytest.mark.parametrize(
    "value,systemd,docker",
    [
        ("plain", 'K="plain"', "K=plain"),
        ('a "quoted" $HOME \\ path', 'K="a \\"quoted\\" \\$HOME \\\\ path"', 'K=a "quoted" $HOME \\ path'),
        ("expandable_segments:True", 'K="expandable_segments:True"', "K=expandable_segments:True"),
    ],
)
def test_env_files(value, systemd, docker):
    assert units.env_file_content({"K": value}, "systemd") == systemd + "\n"
    assert units.env_file_content({"K": value}, "docker") == docker + "\n"


def test_env_file_refuses_newlines():
    with pytest.raises(units.UnitError, match="newline"):
        units.env_file_content({"K": "a\nb"}, "docker")


def test_systemd_quote_escapes_specifiers():
    assert units.systemd_quote("50%") == '"50%%"'
    assert units.systemd_quote("$X") == '"$$X"'
