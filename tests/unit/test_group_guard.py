"""The group guard (plugins/plugin_utils/data/k3_group_guard.py): its reading of the kernel's TCP
tables, on this machine's real /proc, and its decisions, fed observations one interval at a time."""

from __future__ import annotations

import importlib.util
import os
import socket
import time

import pytest
from conftest import ROOT

SPEC = importlib.util.spec_from_file_location(
    "k3_group_guard", ROOT / "plugins" / "plugin_utils" / "data" / "k3_group_guard.py"
)
guard_module = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(guard_module)

NODE0 = "10.77.0.12"
FOLLOWERS = ("10.77.0.13", "10.77.0.16")


@pytest.mark.parametrize("family, address", [(socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")])
def test_a_real_connection_is_found_with_its_peer_and_owned_by_this_process(family, address):
    server = socket.socket(family, socket.SOCK_STREAM)
    server.bind((address, 0))
    server.listen(1)
    client = socket.create_connection(server.getsockname()[:2])
    accepted, _peer = server.accept()
    try:
        counts = guard_module.connections(guard_module._tables(), [address], guard_module.process_inodes([os.getpid()]))
        # Both ends are this process's: the client's socket and the accepted one.
        assert counts == {address: 2}
        # Another process holds none of them; another address has none.
        assert guard_module.connections(guard_module._tables(), [address], set()) == {address: 0}
        assert guard_module.connections(guard_module._tables(), ["192.0.2.1"], set()) == {"192.0.2.1": 0}
    finally:
        for sock in (client, accepted, server):
            sock.close()


def test_the_processes_of_a_control_group_are_found_from_proc():
    """This process's own group, read the way the guard reads a unit's (v1, v2 and hybrid alike)."""
    with open("/proc/self/cgroup") as handle:
        group = handle.read().splitlines()[-1].split(":", 2)[-1]
    assert os.getpid() in guard_module.unit_pids(group)
    assert guard_module.unit_pids("/no/such.slice/k3-none.service") == set()
    assert guard_module.unit_pids("") == set()


def test_a_process_older_than_the_units_start_is_a_leftover():
    later_us = (time.monotonic() + 10) * 1e6
    # This process started before that: had its unit started then, it would be left over.
    assert guard_module.leftovers({os.getpid()}, later_us) == {os.getpid()}
    # A unit that started before this process: it is the unit's own.
    assert guard_module.leftovers({os.getpid()}, 1) == set()
    assert guard_module.leftovers({os.getpid()}, None) == set()
    assert guard_module.leftovers({999999999}, later_us) == set()  # gone


def test_kernel_addresses_read_as_the_kernel_prints_them():
    assert guard_module._address("0100007F:1F90") == "127.0.0.1"
    assert guard_module._address("0C004D0A:A4B2") == "10.77.0.12"
    # An IPv4 peer on an IPv6 socket (::ffff:10.77.0.12) is that IPv4 peer.
    assert guard_module._address("0000000000000000FFFF00000C004D0A:1F90") == "10.77.0.12"
    assert guard_module._address("00000000000000000000000001000000:1F90") == "::1"


def follower(grace=30):
    return guard_module.Guard("follower", [NODE0], grace)


def test_a_follower_that_lost_node0_for_the_grace_is_restarted_once():
    guard = follower()
    assert guard.observe(0, True, "s1", {NODE0: 0}) is None  # starting: not connected yet, not armed
    assert guard.observe(300, True, "s1", {NODE0: 0}) is None  # still not: never restarted while forming
    assert guard.observe(305, True, "s1", {NODE0: 4}) is None  # the group formed: armed
    assert guard.observe(310, True, "s1", {NODE0: 0}) is None  # node 0 gone: the grace starts
    assert guard.observe(339, True, "s1", {NODE0: 0}) is None
    assert guard.observe(340, True, "s1", {NODE0: 0}) == "restart"
    # Restarted (a new start): disarmed until it is connected again.
    assert guard.observe(345, True, "s2", {NODE0: 0}) is None
    assert guard.observe(900, True, "s2", {NODE0: 0}) is None


def test_a_short_loss_or_a_restart_by_anyone_does_not_restart_it():
    guard = follower()
    guard.observe(0, True, "s1", {NODE0: 3})
    assert guard.observe(5, True, "s1", {NODE0: 0}) is None
    assert guard.observe(20, True, "s1", {NODE0: 2}) is None  # back within the grace
    assert guard.observe(60, True, "s1", {NODE0: 2}) is None
    guard.observe(65, True, "s1", {NODE0: 0})
    # A playbook restarted the unit meanwhile: its new start disarms the guard.
    assert guard.observe(100, True, "s2", {NODE0: 0}) is None
    assert guard.observe(200, True, "s2", {NODE0: 0}) is None


def test_a_stopped_unit_is_left_alone():
    guard = follower()
    guard.observe(0, True, "s1", {NODE0: 3})
    assert guard.observe(10, False, None, {}) is None
    assert guard.observe(100, False, None, {}) is None
    # Started again by hand: armed only once it has joined.
    assert guard.observe(110, True, "s2", {NODE0: 0}) is None
    assert guard.observe(200, True, "s2", {NODE0: 0}) is None


def test_node0_restarts_when_a_follower_of_its_formed_group_is_gone():
    guard = guard_module.Guard("node0", FOLLOWERS, 30)
    # Armed only once every follower has been connected since node 0 started.
    assert guard.observe(0, True, "s1", {FOLLOWERS[0]: 2, FOLLOWERS[1]: 0}) is None
    assert guard.observe(100, True, "s1", {FOLLOWERS[0]: 0, FOLLOWERS[1]: 0}) is None
    assert guard.observe(105, True, "s1", {FOLLOWERS[0]: 2, FOLLOWERS[1]: 2}) is None
    # The second follower dies (systemd restarts it, but it cannot join this node 0).
    assert guard.observe(110, True, "s1", {FOLLOWERS[0]: 2, FOLLOWERS[1]: 0}) is None
    assert guard.observe(140, True, "s1", {FOLLOWERS[0]: 2, FOLLOWERS[1]: 0}) == "restart"
    assert guard.observe(145, True, "s2", {FOLLOWERS[0]: 0, FOLLOWERS[1]: 0}) is None
