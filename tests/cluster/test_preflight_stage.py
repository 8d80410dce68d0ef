"""The preflight stage on real test hosts: each fault refused naming host, what and fix; nothing changed.

Real ansible-playbook over SSH to the sandbox's test hosts (tools/sandbox.sh): a wrong k3_nic, a
planned port held by a stray process, a connection dropped by nftables inside a test host, a proxy
variable in a service's environment. Each refusal runs the whole site.yml, and a snapshot of every
host (units, /etc/kimi-k3, /var/lib/kimi-k3, running units and their PIDs, listening sockets) is the
same before and after. A healthy sandbox passes in a few seconds, before and after a deployment
(ports then held by the collection's own units). Needs root and nft on the controller (nftables).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time

import pytest
from conftest import VENV_BIN
from helpers.sandbox_run import HOST_VARS, INVENTORY, on, playbook, recap, run

NFT_TABLE = "k3_preflight_test"

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox needs root"),
    pytest.mark.skipif(
        shutil.which("nft") is None, reason="nft is missing on the controller (apt-get install nftables)"
    ),
]

# What each host looks like: the collection's files and units, its running units, its listening sockets.
SNAPSHOT = r"""
for f in /etc/systemd/system/k3-*; do [ -e "$f" ] && sha256sum "$f"; done
find /etc/kimi-k3 -type f -exec sha256sum {} + 2>/dev/null | sort
find /var/lib/kimi-k3 -maxdepth 2 -printf '%p %y\n' 2>/dev/null | sort
for u in $(systemctl list-units 'k3-*' --all --no-legend --plain | awk '{print $1}'); do
  echo "$u $(systemctl show -p ActiveState -p MainPID -p ActiveEnterTimestampMonotonic --value "$u" | tr '\n' ' ')"
done
ss -Hltn | awk '{print $4}' | sort -u
ls -A /root/.ansible_async 2>/dev/null | sed 's/^/async job file: /'
"""


def site(*args, check=True):
    """site.yml on the sandbox, with each role's time (ansible.posix.profile_roles)."""
    started = time.monotonic()
    proc = playbook("site.yml", *args, check=check, env={"ANSIBLE_CALLBACKS_ENABLED": "ansible.posix.profile_roles"})
    proc.seconds = time.monotonic() - started
    return proc


def role_seconds(output, role):
    """A role's total time as profile_roles prints it at the end of the run."""
    found = re.findall(r"^%s\s+-+\s+([0-9.]+)s" % re.escape(role), output, re.M)
    assert found, output[-3000:]
    return float(found[-1])


def flat(output):
    """The output with the callback's line folding undone (one space for every run of white space)."""
    return re.sub(r"\s+", " ", output)


def snapshot():
    out = run(
        VENV_BIN / "ansible",
        "all",
        "-i",
        INVENTORY,
        "-m",
        "ansible.builtin.shell",
        "-a",
        SNAPSHOT,
        env={"ANSIBLE_LOAD_CALLBACK_PLUGINS": "1", "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json"},
    )
    hosts = json.loads(out.stdout)["plays"][0]["tasks"][0]["hosts"]
    return {h: r["stdout"] for h, r in sorted(hosts.items())}


def host_vars(host, text):
    HOST_VARS.mkdir(exist_ok=True)
    (HOST_VARS / ("%s.yml" % host)).write_text("---\n" + text)


def refused(*args):
    """The whole site.yml, refused by the preflight stage with nothing changed on any host."""
    before = snapshot()
    out = site(*args, check=False)
    text = out.stdout + out.stderr
    assert out.returncode != 0, text[-4000:]
    assert "PLAY [Preflight" in text
    # The run stopped there: no later stage started.
    assert "PLAY [Prerequisites" not in text and "PLAY [Engines" not in text, text[-4000:]
    assert snapshot() == before
    return text


@pytest.fixture(scope="module")
def sandbox(sandbox_hosts):
    """The sandbox's hosts with nothing of the collection on them (tests/helpers/cluster_sandbox.py's)."""
    if sandbox_hosts["deployed"]:
        playbook("playbooks/teardown.yml", "-e", "confirm=yes")
        sandbox_hosts["deployed"] = False
    try:
        yield sandbox_hosts
    finally:
        for f in HOST_VARS.glob("*.yml"):
            f.unlink()


@pytest.fixture
def clean_host_vars():
    yield
    for f in HOST_VARS.glob("*.yml"):
        f.unlink()


def test_a_healthy_sandbox_passes_in_seconds_and_changes_nothing(sandbox):
    before = snapshot()
    out = site("--tags", "plan,preflight")
    assert "PLAY [Preflight" in out.stdout and "Nothing stands in the way" in out.stdout
    counts = recap(out.stdout)
    assert all(c["failed"] == 0 for c in counts.values()), out.stdout[-3000:]
    # No host changes; the controller may write the plan folder (the first plan of a fresh checkout).
    assert all(c["changed"] == 0 for h, c in counts.items() if h != "localhost"), out.stdout[-3000:]
    assert "k3-sb-dp1: 1 connection(s) to other hosts" in flat(out.stdout)  # the follower reached node 0
    seconds = role_seconds(out.stdout, "preflight")
    print("preflight stage: %.1f s (whole run with the plan: %.1f s)" % (seconds, out.seconds))
    assert seconds < 15, out.stdout[-3000:]
    assert snapshot() == before
    # --check checks the same way and reports the same.
    checked = site("--tags", "plan,preflight", "--check")
    assert "k3-sb-dp1: 1 connection(s) to other hosts" in flat(checked.stdout)


def test_a_wrong_k3_nic_is_refused_naming_the_interface_that_owns_the_address(sandbox, clean_host_vars):
    host_vars("k3-sb-dp1", "k3_nic: eth9\n")
    text = refused()
    assert "fatal: [k3-sb-dp1]" in text
    assert (
        "host k3-sb-dp1: k3_nic: k3_nic is eth9, but 10.77.0.13 is on eth0: there is no interface eth9 on this host"
        in text
    )
    assert "Fix: set k3_nic to eth0" in text
    assert "fatal: [k3-sb-dp0]" not in text


def test_a_port_held_by_a_stray_process_is_refused_naming_the_process(sandbox):
    on("k3-sb-prefill", "systemd-run --quiet --unit stray-http python3 -m http.server 8100")
    try:
        for _unused in range(50):
            if on("k3-sb-prefill", "ss -Hltn 'sport = :8100' | grep -q 8100", check=False).returncode == 0:
                break
            time.sleep(0.1)
        pid = on("k3-sb-prefill", "systemctl show -p MainPID --value stray-http").stdout.strip()
        text = refused()
    finally:
        on("k3-sb-prefill", "systemctl stop stray-http", check=False)
    assert "fatal: [k3-sb-prefill]" in text
    assert "host k3-sb-prefill: port 8100: planned for prefill (http) and held by pid %s " % pid in text, text[-4000:]
    assert "python3 -m http.server 8100, unit stray-http), not by k3-prefill" in text
    assert "Fix: stop that process or free the port (kill %s)" % pid in text


def test_a_connection_dropped_by_nftables_is_refused_naming_both_hosts_and_the_port(sandbox):
    nft = ("ip", "netns", "exec", "k3-sb-prefill", "nft")
    run(*nft, "add", "table", "inet", NFT_TABLE)
    try:
        run(*nft, "add", "chain", "inet", NFT_TABLE, "input", "{ type filter hook input priority 0 ; }")
        run(
            *nft, "add", "rule", "inet", NFT_TABLE, "input", "ip", "saddr", "10.77.0.11", "tcp", "dport", "8100", "drop"
        )
        text = refused()
    finally:
        run(*nft, "delete", "table", "inet", NFT_TABLE, check=False)
    assert "fatal: [k3-sb-front]" in text
    assert re.search(
        r"host k3-sb-front: connection: TCP to k3-sb-prefill 10\.77\.0\.14 port 8100 \(prefill health\) timed out "
        r"after 5(\.0)? s \(a firewall drops it or there is no route\); needed because router waits for "
        r"k3-sb-prefill/prefill to be healthy",
        text,
    ), text[-4000:]
    assert "Fix: allow TCP from k3-sb-front to 10.77.0.14 port 8100" in text
    # Only that connection: the others of the same hosts went through.
    assert "fatal: [k3-sb-prefill]" not in text and "fatal: [k3-sb-decode]" not in text


def test_a_firewall_that_would_cut_the_controllers_ssh_is_refused_on_every_host(sandbox):
    """The firewall admits SSH only from k3_admin_networks: a list without the controller (10.77.0.1)
    is refused on every host the table would be loaded on, the monitoring host included."""
    text = refused("-e", '{"k3_admin_networks": ["192.0.2.0/24"]}')
    assert "fatal: [k3-sb-mon]" in text
    for host in ("k3-sb-front", "k3-sb-dp0", "k3-sb-dp1", "k3-sb-prefill", "k3-sb-decode", "k3-sb-mon"):
        assert (
            "host %s: ssh: this run's SSH comes from 10.77.0.1, and the firewall (k3_firewall) admits SSH only from "
            "k3_admin_networks (192.0.2.0/24). Fix: add 10.77.0.1 (or its network) to k3_admin_networks"
            % host
            in flat(text)
        ), text[-4000:]


def test_a_proxy_variable_in_the_service_environment_is_refused(sandbox, clean_host_vars):
    host_vars("k3-sb-decode", "k3_env:\n  https_proxy: http://10.77.0.1:3128\n")
    text = refused()
    assert "fatal: [k3-sb-decode]" in text
    assert (
        "host k3-sb-decode: k3_env.https_proxy: https_proxy=http://10.77.0.1:3128 (set in the planned environment "
        "(k3_env or the profile)) would send decode's traffic to 10.77.0.15 through the proxy" in text
    )
    assert "Fix: remove https_proxy from k3_env" in text


def test_deployed_sandbox_passes_with_the_ports_held_by_its_own_units_then_refuses_without_a_restart(
    sandbox, clean_host_vars, deployed
):
    # (``deployed``: the whole site.yml on these clean hosts, then its re-run)
    out = site("--tags", "plan,preflight")
    seconds = role_seconds(out.stdout, "preflight")
    print("preflight stage on the deployed sandbox: %.1f s (whole run: %.1f s)" % (seconds, out.seconds))
    assert all(c["changed"] == 0 and c["failed"] == 0 for c in recap(out.stdout).values()), out.stdout[-3000:]
    summaries = re.findall(r"(k3-sb-[a-z0-9-]+: \d+ connection\(s\) to other hosts;[^']*)'", flat(out.stdout))
    print("\n".join(summaries))
    # The MetaService's three ports, which prefill uses, are answered by k3-metaservice itself, and
    # the router's connections reach the running prefill and decode engines.
    assert (
        "k3-sb-front: 2 connection(s) to other hosts; ports other hosts connect to: 0 by a short-lived listener, "
        "3 by their running service; clock " in " | ".join(summaries)
    ), summaries
    assert (
        "k3-sb-prefill: 3 connection(s) to other hosts; ports other hosts connect to: 0 by a short-lived listener, "
        "1 by their running service; clock " in " | ".join(summaries)
    ), summaries
    assert seconds < 15
    # A refusal on the running deployment restarts nothing and changes no file.
    host_vars("k3-sb-dp0", "k3_nic: lo\n")
    text = refused()
    assert "host k3-sb-dp0: k3_nic: k3_nic is lo, but 10.77.0.12 is on eth0: lo does not own" in text
