"""Preflight's SSH check: the firewall about to be loaded must admit this run's own SSH session."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.module_utils.preflight_checks import check_ssh
from ansible_collections.kimi_k3.serving.plugins.module_utils.preflight_gather import ssh_session
from ansible_collections.kimi_k3.serving.plugins.module_utils.preflight_parse import (
    parent_pid,
    parse_ssh_connection,
)

SESSION = {"client": "10.77.0.1", "client_port": 51514, "server": "10.77.0.11", "port": 22}


def test_a_session_from_the_admin_networks_to_the_ssh_port_passes():
    assert check_ssh("h", SESSION, ["10.77.0.0/24"], [22]) == []
    assert check_ssh("h", dict(SESSION, client="::ffff:10.77.0.1"), ["10.77.0.1/32"], [22]) == []
    assert check_ssh("h", dict(SESSION, client="fe80::1%eth0"), ["fe80::/64"], [22]) == []
    # Not over SSH (a local or container connection): nothing to cut.
    assert check_ssh("h", None, [], [22]) == []


def test_a_session_the_firewall_would_cut_names_the_host_the_variable_and_the_fix():
    (problem,) = [str(p) for p in check_ssh("k3-sb-front", SESSION, ["192.0.2.0/24"], [22])]
    assert problem == (
        "host k3-sb-front: ssh: this run's SSH comes from 10.77.0.1, and the firewall (k3_firewall) admits SSH "
        "only from k3_admin_networks (192.0.2.0/24). Fix: add 10.77.0.1 (or its network) to k3_admin_networks, "
        "or set k3_firewall: false to leave the firewall to the site"
    )
    (problem,) = [str(p) for p in check_ssh("h", SESSION, [], [22])]
    assert "k3_admin_networks (none set)" in problem
    (problem,) = [str(p) for p in check_ssh("h", dict(SESSION, port=2222), ["10.77.0.1/32"], [22])]
    assert "reaches port 2222, and the firewall admits SSH on 22 only" in problem
    assert "set ansible_port: 2222" in problem


def test_ssh_connection_and_proc_stat_are_read():
    assert parse_ssh_connection("10.77.0.1 51514 10.77.0.11 22") == SESSION
    assert parse_ssh_connection("") is None and parse_ssh_connection("a b c") is None
    assert parent_pid("812 (python3 (x)) S 700 812 812 0 -1") == 700
    assert parent_pid("") == 0


def test_the_session_is_found_in_an_ancestor_when_become_dropped_it(tmp_path, monkeypatch):
    """sudo passes no SSH_CONNECTION on: the module reads its ancestors' environ (as root)."""
    proc = tmp_path
    chain = {
        500: (400, b"PATH=/usr/bin\0SUDO_USER=ops\0"),
        400: (300, b"SSH_CONNECTION=10.77.0.1 51514 10.77.0.11 22\0"),
    }
    for pid, (parent, environ) in chain.items():
        (proc / str(pid)).mkdir()
        (proc / str(pid) / "environ").write_bytes(environ)
        (proc / str(pid) / "stat").write_text("%d (sh) S %d 1 1 0" % (pid, parent))
    monkeypatch.setattr("os.getppid", lambda: 500)
    assert ssh_session(str(proc), environ={}) == SESSION
    assert ssh_session(str(proc), environ={"SSH_CONNECTION": "192.0.2.9 1 192.0.2.1 2222"})["port"] == 2222
    # No ancestor has it (a local connection): None.
    (proc / "400" / "environ").write_bytes(b"HOME=/root\0")
    assert ssh_session(str(proc), environ={}) is None
