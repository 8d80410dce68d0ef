"""The real vLLM (CPU build, the tiny model) started with the flags the plan gives a TLS front door.

HTTPS with --ssl-certfile/--ssl-keyfile, keys from VLLM_API_KEY and a --config file with every key,
run on the controller's loopback; the collection's health wait checks it against the CA. The
certificate and CA are made for the test (tests/helpers/pki.py).
"""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request

import pytest
from conftest import ROOT
from helpers.pki import make_pki

from ansible_collections.kimi_k3.serving.plugins.module_utils.service_probe import http_status
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._plan_auth import secret_file_content

VLLM = ROOT / ".venv" / "vllm" / "bin" / "vllm"
MODEL = ROOT / ".cache" / "sandbox" / "models" / "tiny-llama"
KEYS = ["sk-k3-tls-first", "sk-k3-tls-second"]

pytestmark = pytest.mark.skipif(not VLLM.exists(), reason="the vLLM venv is missing: make venv-vllm")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, context, key=None):
    req = urllib.request.Request(url, headers={"Authorization": "Bearer " + key} if key else {})
    try:
        with urllib.request.urlopen(req, timeout=10, context=context) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    assert MODEL.exists(), "the tiny model is missing: .venv/vllm/bin/python tools/tiny_model.py %s" % MODEL
    tmp = tmp_path_factory.mktemp("tls")
    paths = make_pki(tmp)
    keys_file = tmp / "engine.api-keys.yaml"
    keys_file.write_text(secret_file_content({"path": str(keys_file), "format": "vllm_config_api_keys"}, KEYS))
    keys_file.chmod(0o600)
    port = free_port()
    env = dict(os.environ, VLLM_API_KEY=KEYS[0], HF_HUB_OFFLINE="1", VLLM_ENABLE_V1_MULTIPROCESSING="0")
    # The tail of this argv is what the planner appends to a TLS front door with several keys.
    argv = [
        str(VLLM), "serve", str(MODEL), "--host", "127.0.0.1", "--port", str(port), "--served-model-name", "tiny",
        "--max-model-len", "512", "--dtype", "float32", "--enforce-eager", "--kv-cache-memory-bytes", "64M",
        "--max-num-seqs", "4", "--distributed-executor-backend", "uni",
        "--config", str(keys_file),
        "--ssl-certfile", str(paths["server.pem"]), "--ssl-keyfile", str(paths["server.key"]),
    ]  # fmt: skip
    log = open(tmp / "vllm.log", "w")  # noqa: SIM115 (open for the process's lifetime)
    proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=tmp)
    url = "https://127.0.0.1:%d" % port
    try:
        deadline = time.monotonic() + 600
        while http_status(url + "/health", "", str(paths["ca.pem"])) != 200:
            assert proc.poll() is None, (tmp / "vllm.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "vLLM did not become healthy"
            time.sleep(2)
        yield url, paths, (tmp / "vllm.log")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def test_https_with_the_ca_and_every_key(server):
    url, paths, _log = server
    trusted = ssl.create_default_context(cafile=str(paths["ca.pem"]))
    assert get(url + "/health", trusted) == 200
    assert get(url + "/v1/models", trusted) == 401
    assert get(url + "/v1/models", trusted, "sk-k3-wrong") == 401
    for key in KEYS:
        assert get(url + "/v1/models", trusted, key) == 200


def test_the_certificate_is_checked(server):
    url, paths, _log = server
    with pytest.raises(urllib.error.URLError):
        get(url + "/health", ssl.create_default_context())  # the system's CAs do not know the test CA
    assert http_status(url + "/health", "", "") is None
    assert http_status(url.replace("https", "http") + "/health", "", "") is None


def test_no_key_in_vllm_log(server):
    text = server[2].read_text()
    assert "'api_key': '***'" in text
    assert not any(k in text for k in KEYS)
