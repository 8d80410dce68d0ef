"""playbooks/evaluate.yml for real: a real vLLM (CPU build) serving the tiny multimodal model of
tools/tiny_vlm.py on port 18102, the small datasets of tools/eval_datasets.py, inspect-ai from
.venv/eval, and a localhost inventory (``ansible_connection: local``).

Such an inventory has no deployment to plan, so the endpoint is named with evaluate_endpoint and
evaluate_served_model_name (the playbook then skips planning); the plan's own choice (the front
door) is checked with --check on the sandbox inventory, which plans and connects to no host.
Asserted: the service check passes, every benchmark's score is read from its log, the logs and
scores files are in the run folder, a gate of 0 passes, a gate the random model cannot reach
fails naming the benchmark, a run that cannot reach the endpoint is retried with inspect
eval-retry and then fails as unfinished, a wrong served name fails the service check, and the
API key shows up in no output.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request

import pytest
from conftest import ROOT, VENV_BIN, skip_or_fail, write_sandbox_inventory
from helpers.ansible_run import ansible_playbook

# A real server or an image build: make test runs it, make test-fast leaves it out.
pytestmark = pytest.mark.slow

# One vLLM for the module: make test keeps a file's tests on one pytest-xdist worker (--dist loadfile).
PORT = 18102
SERVED = "kimi-k3-sandbox"
KEY = "k3-eval-test-key-7f3a9c"  # vLLM runs without --api-key: it accepts the header, the test tracks the key
VLLM = ROOT / ".venv" / "vllm" / "bin"
EVAL = ROOT / ".venv" / "eval" / "bin"
CACHE = ROOT / ".cache" / "eval"
# Small budgets: the server's max model length is 512 tokens.
TOKENS = {"ocrbench": 32, "mmmu_pro": 32, "toolcall": 32}


def _listening(port):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/v1/models" % port, timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory):
    if not (VLLM / "vllm").exists():
        skip_or_fail("no .venv/vllm (tools/venvs.sh vllm builds it)")
    if not (EVAL / "inspect").exists():
        skip_or_fail("no .venv/eval (tools/venvs.sh eval builds it)")
    if _listening(PORT):
        pytest.fail("port %d is already serving: stop that server first" % PORT)
    model = CACHE / "models" / "tiny-vlm"
    datasets = CACHE / "datasets"
    subprocess.run([str(VLLM / "python"), str(ROOT / "tools" / "tiny_vlm.py"), str(model)], check=True, timeout=600)
    subprocess.run(
        [str(EVAL / "python"), str(ROOT / "tools" / "eval_datasets.py"), str(datasets)], check=True, timeout=120
    )
    scratch = tmp_path_factory.mktemp("vllm")
    env = dict(
        os.environ,
        VLLM_ENABLE_V1_MULTIPROCESSING="0",
        HF_HUB_OFFLINE="1",
        TMPDIR=str(scratch),
        VLLM_CACHE_ROOT=str(scratch / "vllm"),
        TORCHINDUCTOR_CACHE_DIR=str(scratch / "inductor"),
        HF_HOME=str(scratch / "hf"),
    )
    log = open(scratch / "vllm.log", "w")  # noqa: SIM115 - closed at teardown
    argv = [str(VLLM / "vllm"), "serve", str(model), "--host", "127.0.0.1", "--port", str(PORT)]
    argv += ["--served-model-name", SERVED, "--max-model-len", "512", "--dtype", "float32", "--enforce-eager"]
    argv += ["--kv-cache-memory-bytes", "64M", "--max-num-seqs", "4", "--distributed-executor-backend", "uni"]
    argv += ["--enable-auto-tool-choice", "--tool-call-parser", "hermes", "--limit-mm-per-prompt", '{"image": 1}']
    proc = subprocess.Popen(["nice", "-n", "19", *argv], stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 300
        while not _listening(PORT):
            if proc.poll() is not None or time.monotonic() > deadline:
                log.flush()
                pytest.fail("vLLM did not come up on %d:\n%s" % (PORT, (scratch / "vllm.log").read_text()[-3000:]))
            time.sleep(2)
        yield {"datasets": datasets, "url": "http://127.0.0.1:%d" % PORT}
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@pytest.fixture(scope="module")
def inventory(tmp_path_factory):
    folder = tmp_path_factory.mktemp("inventory")
    path = folder / "hosts.yml"
    path.write_text(
        "all:\n  hosts:\n    localhost:\n      ansible_connection: local\n      ansible_python_interpreter: %s\n"
        # another host to run inspect on (local too: the remote path, fetching the logs back, for real)
        "    evalhost:\n      ansible_connection: local\n      ansible_python_interpreter: %s\n"
        % (VENV_BIN / "python", VENV_BIN / "python")
    )
    return path


def evaluate(inventory, endpoint, runs, name, **extra):
    variables = {
        "evaluate_endpoint": endpoint["url"],
        "evaluate_served_model_name": SERVED,
        "evaluate_datasets": {
            "ocrbench": str(endpoint["datasets"] / "ocrbench"),
            "mmmu_pro": str(endpoint["datasets"] / "mmmu_pro"),
            "toolcall": str(endpoint["datasets"] / "toolcall" / "toolcall_samples.jsonl"),
        },
        "evaluate_max_tokens": TOKENS,
        "evaluate_check_reasoning": False,  # random weights, no reasoning parser
        "evaluate_runs_dir": str(runs),
        "evaluate_run_name": name,
        "k3_api_key": KEY,
    }
    variables.update(extra)
    start = time.monotonic()
    proc = ansible_playbook(
        ROOT / "playbooks" / "evaluate.yml", "-e", json.dumps(variables), inventory=inventory, check=False, timeout=1200
    )
    proc.seconds = time.monotonic() - start
    output = proc.stdout + proc.stderr
    assert KEY not in output, "the API key was printed"
    return proc, output


@pytest.fixture(scope="module")
def passed(inventory, endpoint, tmp_path_factory):
    runs = tmp_path_factory.mktemp("runs")
    gates = {"ocrbench": 0, "mmmu_pro": 0, "toolcall": 0}
    proc, output = evaluate(inventory, endpoint, runs, "gate-zero", evaluate_gates=gates)
    return {"proc": proc, "output": output, "run": runs / "gate-zero"}


def test_gate_zero_passes_and_every_score_is_read(passed):
    proc, output = passed["proc"], passed["output"]
    assert proc.returncode == 0, output[-6000:]
    assert "service check passed: models, max_model_len, sampling, max_tokens, top_p_validated" in output
    assert "every benchmark finished and passed its gate" in output
    data = json.loads((passed["run"] / "scores.json").read_text())
    assert data["endpoint"] == "http://127.0.0.1:%d" % PORT and data["model"] == SERVED
    got = {s["benchmark"]: s for s in data["scores"]}
    assert list(got) == ["ocrbench", "mmmu_pro", "toolcall"]
    for name, score in got.items():
        assert score["status"] == "success", score
        assert (score["samples"], score["completed"]) == (4, 4), score
        assert 0.0 <= score["accuracy"] <= 1.0
        assert score["log"].startswith(str(passed["run"] / name) + "/") and score["log"].endswith(".eval")
    # The "no tool call expected" sample is the one a random model gets right.
    assert got["toolcall"]["accuracy"] == 0.25
    table = (passed["run"] / "scores.txt").read_text().splitlines()
    assert table[0].split() == ["benchmark", "accuracy", "stderr", "samples", "gate", "result"]
    assert [line.split()[-1] for line in table[1:]] == ["pass", "pass", "pass"]
    print("gate-zero run: %.0f s" % proc.seconds)


def test_logs_are_kept_for_inspect_view_with_the_specification_settings(passed):
    run = passed["run"]
    assert (run / "tasks" / "kimi_evals" / "tasks.py").is_file()  # inspect eval-retry reloads the task from here
    for name, tokens in TOKENS.items():
        (log,) = sorted((run / name).glob("*.eval"))
        out = subprocess.run(
            [str(EVAL / "inspect"), "log", "dump", "--header-only", str(log)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert KEY not in out
        header = json.loads(out)
        config = header["plan"]["config"]
        assert (config["max_tokens"], config["max_connections"], config["temperature"], config["top_p"]) == (
            tokens,
            16,
            1.0,
            1.0,
        )
        assert config["reasoning_effort"] == "max"
        assert config["extra_body"] == {"chat_template_kwargs": {"thinking": True}}
        assert header["eval"]["model_args"] == {"stream": True}
        assert header["eval"]["config"]["epochs"] == 1
        assert header["eval"]["model"] == "openai-api/kimi/" + SERVED


def test_an_unreachable_gate_fails_naming_the_benchmark(inventory, endpoint, tmp_path):
    proc, output = evaluate(
        inventory,
        endpoint,
        tmp_path,
        "gate-high",
        evaluate_benchmarks=["ocrbench", "toolcall"],
        evaluate_gates={"ocrbench": 1.0, "toolcall": 0},
        evaluate_check_service=False,
    )
    assert proc.returncode != 0
    assert "OCRBench scored 0.0000, below its gate 1.0000 (evaluate_gates.ocrbench); logs in %s" % (
        tmp_path / "gate-high" / "ocrbench"
    ) in " ".join(output.split())
    assert "ToolCall scored" not in output
    assert json.loads((tmp_path / "gate-high" / "scores.json").read_text())["gates"] == {"ocrbench": 1.0, "toolcall": 0}


def test_an_unfinished_run_is_retried_then_fails_as_unfinished(inventory, endpoint, tmp_path):
    proc, output = evaluate(
        inventory,
        dict(endpoint, url="http://127.0.0.1:18199"),  # nothing listens there
        tmp_path,
        "dead",
        evaluate_benchmarks=["ocrbench"],
        evaluate_check_service=False,
        evaluate_extra_args=["--max-retries", "0"],
        evaluate_retries=1,
    )
    assert proc.returncode != 0
    flat = " ".join(output.split())
    assert "OCRBench did not finish (status error, 0 of 0 samples" in flat
    assert "inspect eval-retry %s/" % (tmp_path / "dead" / "ocrbench") in flat
    assert len(list((tmp_path / "dead" / "ocrbench").glob("*.eval"))) == 2  # the run and its eval-retry


def test_a_missing_dataset_fails_naming_the_benchmark_and_the_path(inventory, endpoint, tmp_path):
    proc, output = evaluate(
        inventory,
        endpoint,
        tmp_path,
        "nodata",
        evaluate_benchmarks=["mmmu_pro"],
        evaluate_datasets={"mmmu_pro": str(tmp_path / "MMMU_Pro")},
        evaluate_check_service=False,
    )
    assert proc.returncode != 0
    assert (
        "MMMU Pro wrote no log in %s: inspect exited 1: "
        "kimi_evals.formats.DatasetError: MMMU Pro dataset %s does not exist"
        % (
            tmp_path / "nodata" / "mmmu_pro",
            tmp_path / "MMMU_Pro",
        )
        in " ".join(output.split())
    )


def test_the_service_check_refuses_a_wrong_served_name(inventory, endpoint, tmp_path):
    proc, output = evaluate(inventory, endpoint, tmp_path, "wrong", evaluate_served_model_name="kimi-k3")
    assert proc.returncode != 0
    assert "models check failed: the endpoint lists ['%s'], not kimi-k3" % SERVED in " ".join(output.split())
    assert not list((tmp_path / "wrong").glob("*/*.eval"))  # no benchmark ran


def test_a_remote_evaluation_host_runs_inspect_and_its_logs_come_back(inventory, endpoint, tmp_path):
    remote = tmp_path / "remote"
    proc, output = evaluate(
        inventory,
        endpoint,
        tmp_path / "runs",
        "remote",
        evaluate_host="evalhost",
        evaluate_remote_dir=str(remote),
        evaluate_benchmarks=["toolcall"],
        evaluate_gates={"toolcall": 0},
    )
    assert proc.returncode == 0, output[-6000:]
    (written,) = sorted((remote / "remote" / "toolcall").glob("*.eval"))
    kept = tmp_path / "runs" / "remote" / "toolcall" / written.name
    assert kept.read_bytes() == written.read_bytes()
    (score,) = json.loads((tmp_path / "runs" / "remote" / "scores.json").read_text())["scores"]
    assert (score["log"], score["kept"], score["accuracy"]) == (str(written), str(kept), 0.25)
    assert (remote / "remote" / "tasks" / "kimi_evals" / "tasks.py").is_file()
    assert not (tmp_path / "runs" / "remote" / "tasks").exists()


def test_check_mode_plans_and_shows_the_front_door_commands_touching_nothing(tmp_path):
    inventory = write_sandbox_inventory(tmp_path / "inventories" / "sandbox", "sandbox")
    variables = {
        "evaluate_datasets": {"ocrbench": "/d/ocr", "mmmu_pro": "/d/mmmu", "toolcall": "/d/tc.jsonl"},
        "evaluate_runs_dir": str(tmp_path / "runs"),
        "evaluate_run_name": "dry",
        "k3_plan_dir": str(tmp_path / "plan"),
        # The sandbox inventory runs ToolCall alone with a short answer (its group_vars): all three here.
        "evaluate_benchmarks": ["ocrbench", "mmmu_pro", "toolcall"],
        "evaluate_max_tokens": {},
        "evaluate_check_reasoning": True,
    }
    proc = ansible_playbook(
        ROOT / "playbooks" / "evaluate.yml",
        "--check",
        "-e",
        json.dumps(variables),
        inventory=inventory,
        check=False,
        timeout=600,
    )
    output = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == 0, output[-4000:]
    # The sandbox's front door: nginx on k3-sb-front (tools/sandbox-hosts.txt), with TLS, its served name.
    assert "endpoint: https://10.77.0.11:8443/v1 (model kimi-k3-sandbox, inspect on localhost)" in output
    run = tmp_path / "runs" / "dry"
    for task, dataset, tokens in (
        ("ocrbench", "/d/ocr", 8192),
        ("mmmu_pro", "/d/mmmu", 96000),
        ("toolcall", "/d/tc.jsonl", 32768),
    ):
        assert (
            "%s/tasks/kimi_evals/tasks.py@%s --model openai-api/kimi/kimi-k3-sandbox -T dataset=%s --max-tokens %d"
            % (
                run,
                task,
                dataset,
                tokens,
            )
            in output
        )
    assert not (tmp_path / "runs").exists()  # --check wrote nothing and sent nothing
    assert "unreachable=1" not in output
