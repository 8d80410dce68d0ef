# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Host preflight: the connection test's short-lived listener, and its process handling.

A host listens on the ports the other hosts connect to (:func:`spawn_listener`: bind now, then serve
in a detached process, so that the module returns at once with every port listening). The listener
greets every connection with ``K3PREFLIGHT <host> <port>`` and notes who answers with
``K3PREFLIGHT <host>``; it exits when every expected host has, after its timeout, or when told to
stop with its token (:func:`stop_listener`). A port already in use is left to its holder. The
connecting side is ``preflight_connect``.
"""

from __future__ import annotations

import errno
import json
import os
import select
import socket
import time
from dataclasses import dataclass

from ansible_collections.kimi_k3.serving.plugins.module_utils.preflight_common import LISTENER_NAME

# What the connection test says first, and what its listener answers.
HELLO = "K3PREFLIGHT"


# ---------------------------------------------------------------------------------------- the greeting
def receive_line(sock, data):
    """Read into ``data`` (a bytearray) up to a newline, or about 512 bytes, or the end.

    An OSError leaves what came before it in ``data``.
    """
    while b"\n" not in data and len(data) < 512:
        chunk = sock.recv(512)
        if not chunk:
            break
        data += chunk
    return data


def words_of(data):
    return data.decode("utf-8", "replace").split()


def _greet(conn, host, port, token):
    """Greet an accepted connection and read its answer: (told to stop, the host that said hello or None)."""
    try:
        # The listener speaks first: a connector that hears no banner knows a real service answered.
        conn.settimeout(2)
        conn.sendall(("%s %s %d\n" % (HELLO, host, port)).encode())
        words = words_of(receive_line(conn, bytearray()))
    except OSError:
        return False, None
    finally:
        conn.close()
    if token and words[:3] == [HELLO, "STOP", token]:
        return True, None
    if len(words) >= 2 and words[0] == HELLO:
        return False, words[1]
    return False, None


def _accept(lsock, host, port, token):
    try:
        conn, _peer = lsock.accept()
    except OSError:
        return False, None
    return _greet(conn, host, port, token)


# ---------------------------------------------------------------------------------------- listening
def _tcp_socket():
    """A TCP socket for IPv6 and IPv4 both, or IPv4 alone where the host has no IPv6."""
    try:
        sock = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    except OSError:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    return sock


def bind_ports(ports):
    """Listening sockets for ``ports`` (``[{"port", "name", "expect"}]``): (sockets, held, errors).

    A port already in use is not listened on (``held``): its holder answers the connections (the
    collection's own running service, or a process the port check names).
    """
    socks = {}
    held, errors = [], {}
    for entry in ports:
        port = int(entry["port"])
        sock = _tcp_socket()
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("", port))
            sock.listen(128)
            sock.setblocking(False)
            socks[sock] = entry
        except OSError as exc:
            sock.close()
            if exc.errno == errno.EADDRINUSE:
                held.append(port)
            else:
                errors[str(port)] = str(exc)
    return socks, sorted(held), errors


def serve(socks, host, timeout, clock=time.monotonic, token=None):
    """Greet every connection and note who said hello, until every expected host has, or ``timeout`` s.

    ``STOP <token>`` instead of a host name ends it at once (:func:`stop_listener`).
    """
    expected = {(int(e["port"]), h) for e in socks.values() for h in e.get("expect") or []}
    seen = set()
    stopped = False
    deadline = clock() + float(timeout)
    try:
        while socks and not expected <= seen and not stopped:
            left = deadline - clock()
            if left <= 0:
                break
            ready, _w, _x = select.select(list(socks), [], [], min(left, 0.5))
            for lsock in ready:
                port = int(socks[lsock]["port"])
                stop, hello = _accept(lsock, host, port, token)
                stopped = stopped or stop
                if hello is not None:
                    seen.add((port, hello))
    finally:
        for sock in socks:
            sock.close()
    return {
        "seen": sorted("%s:%d" % (h, p) for p, h in seen),
        "missing": sorted("%s:%d" % (h, p) for p, h in expected - seen),
    }


def listen(ports, host, timeout, clock=time.monotonic):
    """Bind, then serve in this process: ``{"listened", "held", "errors", "seen", "missing"}``."""
    socks, held, errors = bind_ports(ports)
    listened = sorted(int(e["port"]) for e in socks.values())
    result = serve(socks, host, timeout, clock)
    result.update({"listened": listened, "held": held, "errors": errors})
    return result


def stop_listener(port, token, timeout=3):
    """End a listener of :func:`spawn_listener` that still waits for a connection that did not come."""
    try:
        with socket.create_connection(("localhost", int(port)), timeout=timeout) as sock:
            sock.settimeout(timeout)
            banner = sock.recv(512).decode("utf-8", "replace").split()
            if banner[:1] != [HELLO]:
                return False
            sock.sendall(("%s STOP %s\n" % (HELLO, token)).encode())
            return True
    except OSError:
        return False


# ---------------------------------------------------------------------------------------- the detached process
@dataclass
class _Job:
    """What the detached listener does: serve ``ports`` as ``host`` for ``timeout`` s, stopped by ``token``."""

    ports: list
    host: str
    timeout: float
    token: str


def spawn_listener(ports, host, timeout):
    """Bind now, then serve in a detached process for at most ``timeout`` s; returns what was bound.

    The caller returns at once with every port already listening, so the other hosts can connect
    as soon as their next task starts. The detached process keeps no descriptor of the caller's
    (its output channel stays free) and leaves nothing behind when it exits.
    """
    import secrets

    job = _Job(ports=ports, host=host, timeout=timeout, token=secrets.token_hex(8))
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        _run_detached(job, read_end, write_end)  # never returns
    os.close(write_end)
    data = _read_all(read_end)
    os.waitpid(pid, 0)
    if not data:
        return {"listened": [], "held": [], "errors": {"*": "the listener process did not start"}, "token": None}
    return json.loads(data.decode())


def _run_detached(job, read_end, write_end):
    """The forked child: detach (a new session, a second fork), bind, report on ``write_end``, serve; exits."""
    status = 0
    try:
        os.close(read_end)
        os.setsid()
        if os.fork():
            os._exit(0)
        _close_descriptors(keep=write_end)
        _name_process(LISTENER_NAME)
        socks, held, errors = bind_ports(job.ports)
        bound = {"listened": sorted(int(e["port"]) for e in socks.values()), "held": held, "errors": errors}
        bound["token"] = job.token if socks else None
        os.write(write_end, json.dumps(bound).encode())
        os.close(write_end)
        serve(socks, job.host, job.timeout, token=job.token)
    except BaseException:  # noqa: BLE001 - a detached process must never return into the caller's code
        status = 1
    finally:
        os._exit(status)


def _close_descriptors(keep):
    """Standard input and output to /dev/null, every other descriptor but ``keep`` closed."""
    import resource

    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    limit = 65536 if limit in (resource.RLIM_INFINITY, -1) or limit > 65536 else limit
    os.closerange(3, keep)
    os.closerange(keep + 1, limit)


def _read_all(fd):
    """Everything until the writers close the pipe; closes ``fd``."""
    data = b""
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        data += chunk
    os.close(fd)
    return data


def _name_process(name):
    """Set this process's name (/proc/PID/comm), so a port check can recognise it."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(15, name.encode()[:15], 0, 0, 0)  # PR_SET_NAME
    except (OSError, AttributeError, TypeError):
        pass
