"""The locked-down sandbox of tests/security, deployed once for every module that asks for it.

Real test hosts (tools/sandbox.sh), real vLLM, vllm-router and MetaService over SSH. The sandbox
is deployed with two random keys from an Ansible Vault file made by tools/sandbox_secrets.sh's
method (a pipe into ansible-vault): no key is ever in an argument list, this test's included.
While site.yml runs, every process's argv on the machine (every test host's processes too) is
sampled for the keys. The host set is the sandbox's plus k3-sb-outside (10.77.0.20), a machine on
the same network that is in no group of the deployment. Before the first run, each host's changes
to its base image (the overlay's upper folder) are recorded, for the teardown test to compare.
Needs root; the session builds the hosts once and removes them at its end.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import subprocess
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from conftest import ROOT, VENV_BIN, ansible_env
from sandbox_run import claim_hosts, playbook, release_hosts, run

HOSTS = {"K3SB_HOSTS_FILE": str(ROOT / "tests" / "security" / "hosts.txt")}
SANDBOX_STATE = Path("/var/lib/k3-sandbox/hosts")
SANDBOX_BASE = Path("/var/cache/k3-sandbox/bookworm-minbase")
DEPLOYMENT = ("k3-sb-front", "k3-sb-dp0", "k3-sb-dp1", "k3-sb-prefill", "k3-sb-decode")
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
            for proc in Path("/proc").glob("[0-9]*"):
                try:
                    argv = (proc / "cmdline").read_bytes()
                except OSError:
                    continue
                if any(k in argv for k in self.keys):
                    self.hits.append((proc.name, argv.replace(b"\0", b" ")[:80]))
            self.samples += 1
            self.stop.wait(0.2)


def request(url, key=None, body=None, method=None):
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Authorization"] = "Bearer " + key
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.fixture(scope="session")
def deployed(tmp_path_factory):
    keys = ["sk-k3-test-" + secrets.token_urlsafe(24), "sk-k3-test-" + secrets.token_urlsafe(24)]
    vault = tmp_path_factory.mktemp("vault")
    password = vault / "vault-password"
    password.write_text(secrets.token_urlsafe(32) + "\n")
    password.chmod(0o600)
    secrets_file = vault / "secrets.yml"
    subprocess.run(
        [VENV_BIN / "ansible-vault", "encrypt", "--vault-password-file", password, "--output", secrets_file, "-"],
        input="---\nk3_api_key:\n  - %s\n  - %s\n" % tuple(keys),
        text=True,
        check=True,
        capture_output=True,
        env=ansible_env(),
    )
    plan_dir = tmp_path_factory.mktemp("plan")
    args = ("-e", "@%s" % secrets_file, "--vault-password-file", password, "-e", "k3_plan_dir=%s" % plan_dir)
    run(ROOT / ".venv" / "vllm" / "bin" / "python", "tools/tiny_model.py", ".cache/sandbox/models/tiny-llama")
    claim_hosts("secured", lambda: run("tools/sandbox.sh", "down", check=False, env=HOSTS))
    run("tools/sandbox.sh", "up", env=HOSTS)
    before = {name: host_changes(name) for name in DEPLOYMENT}
    watch = ArgvWatch(keys)
    watch.start()
    try:
        first = playbook("site.yml", "--diff", *args)
        second = playbook("site.yml", *args)
        watch.stop.set()
        watch.join()
        yield {
            "keys": keys,
            "args": args,
            "plan_dir": plan_dir,
            "runs": [first, second],
            "watch": watch,
            "before": before,
        }
    finally:
        watch.stop.set()
        release_hosts("secured")
