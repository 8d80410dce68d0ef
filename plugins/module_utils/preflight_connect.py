# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Host preflight: the connection test's connections to the other hosts' listeners.

:func:`connect` makes every planned connection of a host at once (threads), each retried while
refused or unreachable until the timeout (the listener may still be starting). A listener of
``preflight_listener`` greets first and is told who connects; a port answered by a running service
(no greeting) is only connected to: nothing is sent to it.
"""

from __future__ import annotations

import errno
import socket
import time

from ansible_collections.kimi_k3.serving.plugins.module_utils.preflight_listener import (
    HELLO,
    receive_line,
    words_of,
)

# Seconds between two tries of a connection that was refused or found no route.
RETRY_DELAY = 0.2
# Connections made at once (one thread each).
BATCH = 512


def _dial(target, left):
    """(socket, None, False) once connected, else (None, error, whether to try again)."""
    try:
        return socket.create_connection((target["ip"], int(target["port"])), timeout=left), None, False
    except TimeoutError:  # socket.timeout before 3.10 is an OSError whose text is 'timed out'
        return None, "timed out", False
    except ConnectionRefusedError:
        return None, "refused", True
    except OSError as exc:
        if exc.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH):
            return None, "unreachable (%s)" % exc.strerror, True
        return None, str(exc), False


def _hello(sock, host, left):
    """The words the other end said first, after saying hello to it if it is a listener; closes ``sock``."""
    data = bytearray()
    try:
        # Our listener greets at once; a running service (HTTP, ZMQ ...) is left alone after a short wait.
        sock.settimeout(max(0.2, min(0.5, left)))
        words = words_of(receive_line(sock, data))
        if words[:1] == [HELLO]:
            sock.sendall(("%s %s\n" % (HELLO, host)).encode())
    except OSError:
        words = words_of(data)
    finally:
        sock.close()
    return words


def _connect_one(target, host, deadline, clock, sleep, held=False):
    """One connection: retried while refused (the listener may still be starting) until ``deadline``.
    ``held``: the port is known to be held by a running service, which says nothing first: no wait."""
    last = None
    while True:
        left = deadline - clock()
        if left <= 0:
            return {"ok": False, "error": last or "timed out"}
        sock, error, again = _dial(target, left)
        if again:
            last = error
            sleep(RETRY_DELAY)
            continue
        if sock is None:
            return {"ok": False, "error": error}
        if held:
            sock.close()
            return {"ok": True, "answered_by": None}
        words = _hello(sock, host, deadline - clock())
        if words[:1] == [HELLO]:
            return {"ok": True, "answered_by": words[1] if len(words) > 1 else None}
        # Not the listener: the port's holder (the running service) accepted the connection.
        return {"ok": True, "answered_by": None}


def connect(targets, host, timeout, clock=time.monotonic, sleep=time.sleep, held=None):
    """Connect to every target at once (threads); each result is the target plus ok/error/answered_by.

    ``held``: ``{host: [port, ...]}``, the ports each host's listener found held by a running service
    (a deployed cluster's own units): connected to, without waiting for a greeting that never comes."""
    import threading

    deadline = clock() + float(timeout)
    results = [None] * len(targets)
    held = held or {}

    def run(i):
        t = targets[i]
        busy = int(t["port"]) in {int(p) for p in held.get(t.get("dst")) or ()}
        results[i] = dict(t, **_connect_one(t, host, deadline, clock, sleep, busy))

    for start in range(0, len(targets), BATCH):
        threads = [
            threading.Thread(target=run, args=(i,), daemon=True) for i in range(start, min(start + BATCH, len(targets)))
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    return results
