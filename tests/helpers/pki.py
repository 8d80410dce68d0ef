"""A throwaway CA and a server certificate for 127.0.0.1, for the TLS tests: the sandbox's own
maker (tools/sandbox_tls.py), on the loopback's one address."""

from __future__ import annotations

import importlib.util

from conftest import ROOT


def sandbox_tls():
    """tools/sandbox_tls.py as a module."""
    spec = importlib.util.spec_from_file_location("sandbox_tls", ROOT / "tools" / "sandbox_tls.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_pki(tmp_path):
    """ca.pem, server.pem and server.key in a folder under ``tmp_path``; returns their paths by name."""
    folder = tmp_path / "pki"
    sandbox_tls().make(str(folder), "127.0.0.1/32")
    return {
        "ca.pem": folder / "ca.pem",
        "server.pem": folder / "front-door.pem",
        "server.key": folder / "front-door.key",
    }
