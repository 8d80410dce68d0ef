"""What the locked-down sandbox's tests look at: a host's changes to its base image, every argv on
the machine while site.yml runs, HTTP requests with or without a key.

The deployment itself (two random API keys from an Ansible Vault file, the argv sampled while it
deploys, each host's changes recorded before the first run) is tests/helpers/cluster_sandbox.py's fixture
``deployed``, shared by tests/cluster and tests/security.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import ssl
import threading
import urllib.error
import urllib.request
from pathlib import Path

SANDBOX_STATE = Path("/var/lib/k3-sandbox/hosts")
SANDBOX_BASE = Path("/var/cache/k3-sandbox/bookworm-minbase")
DEPLOYMENT = ("k3-sb-front", "k3-sb-dp0", "k3-sb-dp1", "k3-sb-prefill", "k3-sb-decode")
# vllm-router 0.1.17's HTTP routes, as its binary names them (tests/contract/test_router_routes.py
# checks each is in it); the sandbox probes each without a key (tests/security/test_locked_down.py).
ROUTER_ROUTES = [
    ("GET", "/health"),
    ("GET", "/health_generate"),
    ("GET", "/liveness"),
    ("GET", "/readiness"),
    ("GET", "/v1/models"),
    ("GET", "/get_model_info"),
    ("GET", "/get_server_info"),
    ("GET", "/get_loads"),
    ("POST", "/v1/chat/completions"),
    ("POST", "/v1/completions"),
    ("POST", "/v1/responses"),
    ("GET", "/v1/responses/{response_id}"),
    ("POST", "/v1/responses/{response_id}/cancel"),
    ("GET", "/v1/responses/{response_id}/input"),
    ("POST", "/v1/embeddings"),
    ("POST", "/v1/rerank"),
    ("POST", "/rerank"),
    ("POST", "/generate"),
    ("POST", "/tokenize"),
    ("POST", "/v1/chat/completions/render"),
    ("POST", "/v1/completions/render"),
    ("POST", "/add_worker"),
    ("POST", "/remove_worker"),
    ("GET", "/list_workers"),
    ("POST", "/flush_cache"),
    ("GET", "/workers"),
    ("POST", "/workers"),
    ("DELETE", "/workers/{url}"),
    ("POST", "/start_profile"),
    ("POST", "/stop_profile"),
    ("POST", "/finish_session"),
    ("GET", "/scheduling/diagnostics"),
]


# What a host changes on its own while it runs (its journal, systemd's and the package tools'
# bookkeeping, SSH sessions, Ansible's temporary files): not the collection's doing.
NOISE = (
    "var/log/journal",
    "var/lib/systemd",
    "var/cache",
    "var/tmp",
    "tmp",
    "root/.ansible",
    "root/.cache",
    "var/log/lastlog",
    "var/log/wtmp",
    "var/log/btmp",
    "etc/machine-id",
    "var/lib/dhcp",
    "var/lib/private",
    "var/lib/dbus",
    # Debian's daily dpkg-db-backup timer (at midnight) copies dpkg's database there on every host:
    # the distribution's housekeeping, not the collection's (a run across midnight saw it).
    "var/backups",
)


def _digest(path):
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def host_changes(name):
    """Every path the host changed relative to its base image (overlay upper), with its content's digest.

    A folder of the base image that only holds changes (the overlay copies it up) is not a change
    itself, nor is a file or link copied up with the base image's content.
    """
    upper = SANDBOX_STATE / name / "upper"
    out = {}
    for dirpath, dirnames, filenames in os.walk(upper):
        rel_dir = os.path.relpath(dirpath, upper)
        rel_dir = "" if rel_dir == "." else rel_dir
        if any(rel_dir == n or rel_dir.startswith(n + "/") for n in NOISE):
            dirnames[:] = []
            continue
        for entry in filenames + dirnames:
            rel = os.path.join(rel_dir, entry)
            if any(rel == n or rel.startswith(n + "/") for n in NOISE):
                continue
            path = os.path.join(dirpath, entry)
            base = SANDBOX_BASE / rel
            if os.path.islink(path):
                target = os.readlink(path)
                if not (base.is_symlink() and os.readlink(base) == target):
                    out[rel] = "link:" + target
            elif os.path.isfile(path):
                digest = _digest(path)
                # A file copied up unchanged (moved away and back) is the base image's own.
                if not (base.is_file() and not base.is_symlink() and _digest(base) == digest):
                    out[rel] = digest
            elif os.path.isdir(path):
                if not (SANDBOX_BASE / rel).is_dir():
                    out[rel] = "dir"
            else:
                out[rel] = "removed from the base image (whiteout)"
    return out


class ArgvWatch(threading.Thread):
    """Reads /proc/*/cmdline of every process on the machine until stopped; keeps any that holds a key."""

    def __init__(self, keys):
        super().__init__(daemon=True)
        self.keys = [k.encode() for k in keys]
        self.hits = []
        self.samples = 0
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            # os.listdir and os.open: a third of pathlib's processor time a sweep (five sweeps a second).
            for pid in os.listdir("/proc"):
                if not pid.isdigit():
                    continue
                try:
                    fd = os.open("/proc/%s/cmdline" % pid, os.O_RDONLY)
                except OSError:
                    continue
                try:
                    argv = os.read(fd, 1 << 20)
                except OSError:
                    argv = b""
                finally:
                    os.close(fd)
                if any(k in argv for k in self.keys):
                    self.hits.append((pid, argv.replace(b"\0", b" ")[:80]))
            self.samples += 1
            self.stop.wait(0.2)


# The front door of the sandbox (nginx, TLS with the sandbox's CA: tools/sandbox_tls.py).
FRONT_DOOR = "https://10.77.0.11:8443"
SANDBOX_CA = Path(__file__).resolve().parents[2] / ".cache" / "sandbox" / "tls" / "ca.pem"


# Filled by tests/helpers/cluster_sandbox.py's fixture: the monitoring's basic-auth password (the vault's).
MONITORING = {"user": "kimi-k3", "password": None}


def monitoring_request(url, body=None, method=None, auth=True):
    """(status, text) from Prometheus or Alertmanager on the monitoring host, with its credentials
    (or, auth=False, without them); https is checked against the sandbox's CA."""
    token = base64.b64encode(("%s:%s" % (MONITORING["user"], MONITORING["password"])).encode()).decode()
    return _send(url, "Basic " + token if auth else None, body, method)


def request(url, key=None, body=None, method=None):
    """(status, text) of one request; https is checked against the sandbox's CA."""
    return _send(url, "Bearer " + key if key is not None else None, body, method)


def _send(url, authorization, body, method):
    headers = {"Content-Type": "application/json"}
    if authorization:
        headers["Authorization"] = authorization
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers=headers, method=method)
    context = ssl.create_default_context(cafile=str(SANDBOX_CA)) if url.startswith("https:") else None
    try:
        with urllib.request.urlopen(req, timeout=120, context=context) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
