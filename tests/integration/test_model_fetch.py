"""kimi_k3.serving.model_fetch with the real huggingface_hub against a real Hub-compatible server.

The server is olah (.venv/services, a self-hosted Hugging Face mirror) serving, offline, a repository
tools/sandbox_hub.py makes from a generated checkpoint: Git with LFS weight files, as the Hub keeps
a model. The module runs through Ansible (ad hoc, on the controller, under .venv/services' Python,
which has huggingface_hub), as the model_weights role runs it on a seed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import urllib.request

import pytest
from conftest import ROOT, VENV_BIN
from helpers.model_fetch import SERVICES, free_port, model_fetch, result, token_gate

REPO = "k3-test/fetched"
WEIGHTS = 48 * 1024 * 1024
SOURCE = {"hub": "huggingface", "repo": REPO}

pytestmark = pytest.mark.skipif(not (SERVICES / "olah-cli").exists(), reason="no olah: make venv-vllm (tools/venvs.sh)")


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """olah on a free port, serving a checkpoint of two weight shards and a config."""
    root = tmp_path_factory.mktemp("hub")
    checkpoint = root / "checkpoint"
    checkpoint.mkdir()
    (checkpoint / "config.json").write_text('{"model_type": "llama"}\n')
    for index in (1, 2):
        (checkpoint / ("model-%05d-of-00002.safetensors" % index)).write_bytes(os.urandom(WEIGHTS))
    revision = subprocess.run(
        [
            str(VENV_BIN / "python"),
            str(ROOT / "tools" / "sandbox_hub.py"),
            str(checkpoint),
            str(root / "mirrors"),
            REPO,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    port = free_port()
    (root / "olah.toml").write_text(
        '[basic]\nhost = "127.0.0.1"\nport = %d\nrepos-path = "%s"\nmirrors-path = ["%s"]\n'
        "[accessibility]\noffline = true\n" % (port, root / "cache", root / "mirrors")
    )
    server = subprocess.Popen(
        [str(SERVICES / "olah-cli"), "-c", str(root / "olah.toml")],
        cwd=root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    endpoint = "http://127.0.0.1:%d" % port
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen("%s/api/models/%s/refs" % (endpoint, REPO), timeout=2).close()
            break
        except OSError:
            time.sleep(0.2)
    try:
        yield {"endpoint": endpoint, "revision": revision, "root": root, "checkpoint": checkpoint}
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


def fetch(hub, dest, check=True, revision=None, endpoint=None, **extra):
    args = {
        "name": "model",
        "dest": str(dest),
        "source": {
            "hub": "huggingface",
            "repo": REPO,
            "revision": revision or hub["revision"],
            "endpoint": endpoint or hub["endpoint"],
        },
        **extra,
    }
    return model_fetch(args, check=check)


def descendants(pid):
    """Every process below ``pid`` (from /proc: children by their parent's id)."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = open("/proc/%s/stat" % entry).read()  # noqa: SIM115, PTH123 - read at once
            except OSError:
                continue
            parents.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        children = parents.get(todo.pop(), [])
        found.extend(children)
        todo.extend(children)
    return found


def test_fetched_verified_moved_into_place_and_a_rerun_fetches_nothing(hub, tmp_path):
    dest = tmp_path / "models" / "K3"
    first = result(fetch(hub, dest))
    assert first["changed"] and first["fetched_bytes"] == first["bytes"] == 2 * WEIGHTS + 24
    assert sorted(p.name for p in dest.iterdir()) == sorted(
        [".k3-source.json", "config.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    )
    for name in ("config.json", "model-00001-of-00002.safetensors"):
        assert (dest / name).read_bytes() == (hub["checkpoint"] / name).read_bytes()
    # Nothing of the transfer is left beside it: no staging folder, no client bookkeeping.
    assert sorted(p.name for p in dest.parent.iterdir()) == ["K3"]
    again = result(fetch(hub, dest))
    assert not again["changed"] and again["fetched_bytes"] == 0 and again["files"] == first["files"]


def test_a_wrong_revision_and_an_unreachable_hub_are_named(hub, tmp_path):
    wrong = fetch(hub, tmp_path / "K3", check=False, revision="1" * 40)
    assert wrong.returncode != 0
    assert "revision %s not found in %s on %s: pin a commit the repository has" % ("1" * 40, REPO, hub["endpoint"]) in (
        wrong.stdout
    )
    closed = "http://127.0.0.1:%d" % free_port()
    gone = fetch(hub, tmp_path / "K3", check=False, endpoint=closed)
    assert gone.returncode != 0 and "cannot reach %s" % closed in gone.stdout and "HTTPS_PROXY" in gone.stdout
    assert not (tmp_path / "K3").exists()


def test_a_token_the_hub_refuses_is_named_and_never_shown(hub, tmp_path):
    """olah checks no token: Debian's nginx in front of it refuses every request without the right
    one, as the Hub answers a bad token."""
    right, wrong = "hf_right_0123456789", "hf_wrong_9876543210"  # noqa: S105 - test tokens
    with token_gate(tmp_path, right, "proxy_pass %s;" % hub["endpoint"]) as gated:
        refused = fetch(hub, tmp_path / "K3", check=False, endpoint=gated, token=wrong)
        assert refused.returncode != 0
        assert "the token was refused (HTTP 401)" in refused.stdout, refused.stdout
        assert "renew k3_model_weights_hf_token in the vault" in refused.stdout
        assert wrong not in refused.stdout + refused.stderr
        assert not (tmp_path / "K3").exists()
        # The right token fetches through the same gate.
        passed = fetch(hub, tmp_path / "K3", endpoint=gated, token=right)
        assert result(passed)["changed"] and right not in passed.stdout
        assert (tmp_path / "K3" / "model-00002-of-00002.safetensors").stat().st_size == WEIGHTS


def test_a_corrupted_shard_on_the_mirror_is_refused_naming_it_and_nothing_moves(hub, tmp_path):
    listed = result(fetch(hub, tmp_path / "probe"))["files"]
    shard = next(f for f in listed if f["path"] == "model-00002-of-00002.safetensors")
    stored = next((hub["root"] / "mirrors").rglob(shard["sha256"]))
    original = stored.read_bytes()
    try:
        stored.write_bytes(original[:100] + bytes([original[100] ^ 0xFF]) + original[101:])
        bad = fetch(hub, tmp_path / "K3", check=False)
    finally:
        stored.write_bytes(original)
    assert bad.returncode != 0
    assert "model (%s): not as the publisher's, nothing moved into place: model-00002-of-00002.safetensors: SHA-256" % (
        tmp_path / "K3"
    ) in bad.stdout.replace("\\n", " ")
    assert not (tmp_path / "K3").exists()
    # What did match stays in staging for the next run, which completes.
    assert (tmp_path / ".K3.k3-partial" / "model-00001-of-00002.safetensors").exists()
    assert result(fetch(hub, tmp_path / "K3"))["changed"]
    assert not (tmp_path / ".K3.k3-partial").exists()


def test_a_transfer_killed_half_way_goes_on_at_the_next_run(hub, tmp_path):
    dest = tmp_path / "K3"
    cmd = [
        str(VENV_BIN / "ansible"),
        "localhost",
        "-m",
        "kimi_k3.serving.model_fetch",
        "-a",
        json.dumps(
            {
                "name": "model",
                "dest": str(dest),
                "workers": 1,
                "source": {
                    "hub": "huggingface",
                    "repo": REPO,
                    "revision": hub["revision"],
                    "endpoint": hub["endpoint"],
                },
            }
        ),
        "-e",
        "ansible_python_interpreter=%s" % (SERVICES / "python"),
    ]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    staging = tmp_path / ".K3.k3-partial"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if any(p.is_file() and p.stat().st_size > 0 for p in staging.rglob("*.safetensors*")):
            break
        time.sleep(0.01)
    # The module runs in a session of its own under Ansible's worker: every descendant goes.
    for pid in [proc.pid, *descendants(proc.pid)]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait(timeout=30)
    assert staging.is_dir() and not dest.exists(), "the transfer ended before it could be cut"
    done = result(fetch(hub, dest))
    assert done["changed"] and not staging.exists()
    for name in ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"):
        assert (dest / name).read_bytes() == (hub["checkpoint"] / name).read_bytes()
    shutil.rmtree(dest)
