"""A free port on the loopback, and waiting until a server a test started listens there (or failing
with what it said)."""

from __future__ import annotations

import socket
import time


def free_port():
    """A TCP port of the loopback no one listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_listening(port, proc, what, timeout=20):
    """Return once 127.0.0.1:``port`` accepts a connection; if ``proc`` (its Popen) ends first or
    ``timeout`` passes, kill it and raise naming ``what`` with its stderr (when it was piped)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                said = proc.stderr.read() if proc.stderr else ""
                raise RuntimeError("%s did not start: %s" % (what, said)) from None
            time.sleep(0.05)
