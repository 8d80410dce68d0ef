"""The distribution registry of Debian's package run by a test, podman as a node's image store, and
what a registry's access log says it served."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import yaml


def serve(binary, config, folder, name):
    """The registry ``binary`` with ``config`` (a dict), its log at ``folder/<name>.log``; waits for its API."""
    path = folder / ("%s.yml" % name)
    path.write_text(yaml.safe_dump(config))
    log = (folder / ("%s.log" % name)).open("w")
    process = subprocess.Popen([str(binary), "serve", str(path)], stdout=log, stderr=subprocess.STDOUT)
    url = "http://%s/v2/" % config["http"]["addr"]
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200:
                    return process
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise AssertionError("%s did not answer at %s: %s" % (name, url, (folder / ("%s.log" % name)).read_text()))


def plain(folder, address):
    """The configuration of a plain registry (a stand-in for Docker Hub) at ``address``, its access log on."""
    return {
        "version": 0.1,
        "log": {"level": "info", "accesslog": {"disabled": False}},
        "storage": {"filesystem": {"rootdirectory": str(folder / "hub")}},
        "http": {"addr": address},
    }


def runroot(node):
    """``node``'s podman run folder: a short path of its own (podman refuses one over 50 characters,
    which a pytest worker's temporary folder exceeds)."""
    return Path("/tmp") / ("k3-podman-%s" % hashlib.sha256(str(node).encode()).hexdigest()[:12])


def podman(node, *args, conf=None):
    """podman with ``node``'s own image store (vfs) and the registries.conf ``conf``."""
    env = dict(os.environ, CONTAINERS_REGISTRIES_CONF=str(conf)) if conf else dict(os.environ)
    command = ["podman", "--root", str(node / "storage"), "--runroot", str(runroot(node)), "--storage-driver", "vfs"]
    return subprocess.run(command + list(args), capture_output=True, text=True, env=env, timeout=300, check=False)


def push(maker, image, destination, *options):
    """``image`` of ``maker``'s store pushed to ``destination`` (a plain-HTTP registry): its digest."""
    digest_file = maker / "digest"
    pushed = podman(maker, "push", "--tls-verify=false", *options, "--digestfile", str(digest_file), image, destination)
    assert pushed.returncode == 0, pushed.stderr
    return digest_file.read_text().strip()


def forget(*nodes):
    """The image stores of ``nodes`` removed, with their run folders."""
    for node in nodes:
        shutil.rmtree(runroot(node), ignore_errors=True)
        shutil.rmtree(node, ignore_errors=True)


def blob_gets(log):
    """``[(client address, blob digest)]`` a registry served (GET .../blobs/<digest>, 200), in order."""
    return re.findall(r'^(\S+) - - \[[^]]+\] "GET /v2/\S+/blobs/(sha256:[0-9a-f]{64}) \S+" 200 ', log, re.M)
