"""kimi_k3.serving.model_fetch with the real ModelScope SDK against a DOUBLE of ModelScope's hub.

No ModelScope server can run here: tests/doubles/modelscope_hub.py answers the SDK's two read
routes in the shape of a recorded real answer (tests/unit/fixtures/modelscope/SOURCES.md), from a
generated checkpoint, and refuses requests without its token as the hub does. The module runs
through Ansible under .venv/services' Python, which has the SDK, as the model_weights role runs it
on an Ascend seed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from conftest import ROOT
from helpers.model_fetch import SERVICES, free_port, model_fetch, result

REPO = "Eco-Tech/K3-test"
COMMIT = "5f1c0e4d9a7b3c2e1f0a9b8c7d6e5f4a3b2c1d0e"
TOKEN = "ms-test-token"  # noqa: S105 - the double's token, not a secret
WEIGHTS = 24 * 1024 * 1024

pytestmark = pytest.mark.skipif(
    not (SERVICES / "python").exists()
    or subprocess.run([str(SERVICES / "python"), "-c", "import modelscope_hub"], check=False).returncode,
    reason="no modelscope SDK: tools/venvs.sh services",
)


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """The double on a free port, serving a checkpoint of two weight shards and a config at COMMIT (tag v1.0)."""
    checkpoint = tmp_path_factory.mktemp("modelscope") / "checkpoint"
    checkpoint.mkdir()
    (checkpoint / "config.json").write_text('{"model_type": "llama"}\n')
    for index in (1, 2):
        (checkpoint / ("model-%05d-of-00002.safetensors" % index)).write_bytes(os.urandom(WEIGHTS))
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "doubles" / "modelscope_hub.py"), "--folder", str(checkpoint)]
        + ["--repo", REPO, "--revision", COMMIT, "--tag", "v1.0", "--listen", "127.0.0.1:%d" % port],
        env={**os.environ, "MODELSCOPE_DOUBLE_TOKEN": TOKEN},
        start_new_session=True,
    )
    endpoint = "http://127.0.0.1:%d" % port
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(endpoint, timeout=2).close()
        except urllib.error.HTTPError:
            break  # it answers (401: no token)
        except OSError:
            time.sleep(0.1)
    try:
        yield {"endpoint": endpoint, "checkpoint": checkpoint}
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


def fetch(hub, dest, check=True, token=TOKEN, revision="v1.0"):
    args = {
        "name": "model",
        "dest": str(dest),
        "source": {"hub": "modelscope", "repo": REPO, "revision": revision, "endpoint": hub["endpoint"]},
        "token": token,
    }
    return model_fetch(args, check=check)


def test_fetched_with_the_sdk_checked_against_every_sha256_and_a_rerun_fetches_nothing(hub, tmp_path):
    dest = tmp_path / "Kimi-K3-w4a8"
    first = result(fetch(hub, dest))
    assert first["changed"] and first["fetched_bytes"] == first["bytes"] == 2 * WEIGHTS + 24
    # ModelScope gives a SHA-256 for every file, the small ones too.
    assert all(len(entry["sha256"]) == 64 for entry in first["files"]) and len(first["files"]) == 3
    for name in ("config.json", "model-00002-of-00002.safetensors"):
        assert (dest / name).read_bytes() == (hub["checkpoint"] / name).read_bytes()
    # Nothing of the transfer is left: no staging folder, no SDK cache or lock files.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Kimi-K3-w4a8"]
    assert sorted(p.name for p in dest.iterdir() if p.name.startswith(".")) == [".k3-source.json"]
    again = result(fetch(hub, dest))
    assert not again["changed"] and again["fetched_bytes"] == 0


def test_a_refused_token_and_a_wrong_revision_are_named_and_nothing_is_fetched(hub, tmp_path):
    refused = fetch(hub, tmp_path / "K3", check=False, token="wrong-7f3a")  # noqa: S106 - a wrong token
    assert refused.returncode != 0
    assert "model (%s): the token was refused" % (tmp_path / "K3") in refused.stdout
    assert "renew k3_model_weights_modelscope_token in the vault" in refused.stdout
    assert "wrong-7f3a" not in refused.stdout  # the module's result never shows the token
    wrong = fetch(hub, tmp_path / "K3", check=False, revision="v9.9")
    assert wrong.returncode != 0
    assert "revision v9.9 not found in %s on %s: pin a tag or commit the repository has" % (REPO, hub["endpoint"]) in (
        wrong.stdout
    )
    assert not any(tmp_path.iterdir())


def test_a_file_served_unlike_its_listed_sha256_is_refused_naming_it(hub, tmp_path):
    shard = hub["checkpoint"] / "model-00001-of-00002.safetensors"
    original = shard.read_bytes()
    try:
        shard.write_bytes(original[:50] + bytes([original[50] ^ 0xFF]) + original[51:])
        bad = fetch(hub, tmp_path / "K3", check=False)
    finally:
        shard.write_bytes(original)
    assert bad.returncode != 0
    assert "model (%s): not as the publisher's, nothing moved into place: model-00001-of-00002.safetensors: " % (
        tmp_path / "K3"
    ) in bad.stdout.replace("\\n", " ")
    assert not (tmp_path / "K3").exists()
    assert result(fetch(hub, tmp_path / "K3"))["changed"]
    assert (tmp_path / "K3" / shard.name).read_bytes() == original


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small filesystem needs root")
def test_no_room_is_named_with_what_is_needed_before_anything_is_fetched(hub, tmp_path):
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(small)], check=True)
    try:
        full = fetch(hub, small / "K3", check=False)
        assert full.returncode != 0
        assert "model (%s): %d bytes still to fetch, " % (small / "K3", 2 * WEIGHTS + 24) in full.stdout
        assert "free on its filesystem: free space or choose another folder" in full.stdout
        assert sorted(p.name for p in small.iterdir()) == []  # nothing fetched, nothing left
    finally:
        subprocess.run(["umount", str(small)], check=True)
