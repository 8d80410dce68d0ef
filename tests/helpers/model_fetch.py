"""kimi_k3.serving.model_fetch run as the model_weights role runs it on a seed: through Ansible (ad
hoc, on the controller), under .venv/services' Python, which has the hubs' clients."""

from __future__ import annotations

import json
import socket

from conftest import ROOT, VENV_BIN

from helpers.ansible_run import run

SERVICES = ROOT / ".venv" / "services" / "bin"


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def model_fetch(args, check=True):
    """The module with ``args`` (its options), its one-line output captured."""
    return run(
        VENV_BIN / "ansible",
        "localhost",
        "-m",
        "kimi_k3.serving.model_fetch",
        "-a",
        json.dumps(args),
        "-e",
        "ansible_python_interpreter=%s" % (SERVICES / "python"),
        "-o",
        check=check,
        timeout=300,
    )


def result(proc):
    """The module's result in a one-line output."""
    return json.loads(proc.stdout.split("=>", 1)[1])
