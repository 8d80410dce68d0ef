"""Locked down, on the real sandbox: API keys (401 without, 200 with, the keys nowhere they must not be)
and the firewall (the planned ports refuse a host outside the deployment; SSH stays open).

Real test hosts, real vLLM, vllm-router and MetaService over SSH: the deployment (two random API
keys from a vault file, argv sampled while it deploys) is tests/secured_sandbox.py's fixture
``deployed``, shared with test_operate.py. Needs root.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from conftest import VENV_BIN
from sandbox_run import INVENTORY, adhoc, playbook, recap, run
from secured_sandbox import request

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox needs root")

ROUTER = "http://10.77.0.11:8000"
ENGINE = "http://10.77.0.12:8000"  # node 0 of the data-parallel engine: it serves clients itself
PREFILL = "http://10.77.0.14:8100"
DECODE = "http://10.77.0.15:8200"
# The only files that may hold a key: the 0600 environment files (and, with several keys, vLLM's key files).
ALLOWED = ("/etc/kimi-k3/", (".env", ".api-keys.yaml"))
HERE = Path(__file__).resolve().parent
OUTSIDE = "k3-sb-outside"


def test_front_door_needs_a_key(deployed):
    key, other = deployed["keys"]
    chat = {"model": "kimi-k3-sandbox", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4}
    assert request(ROUTER + "/v1/models")[0] == 401
    assert request(ROUTER + "/v1/models", "sk-k3-wrong")[0] == 401
    assert request(ROUTER + "/v1/chat/completions", None, chat)[0] == 401
    # vllm-router's validation guards /health too.
    assert request(ROUTER + "/health")[0] == 401
    for good in (key, other):
        status, text = request(ROUTER + "/v1/models", good)
        assert status == 200 and "kimi-k3-sandbox" in text
        status, text = request(ROUTER + "/v1/chat/completions", good, chat)
        assert status == 200, text
        assert json.loads(text)["usage"]["completion_tokens"] > 0


def test_engines_need_the_key_too(deployed):
    key, other = deployed["keys"]
    for url in (ENGINE, PREFILL, DECODE):
        assert request(url + "/v1/models")[0] == 401, url
        assert request(url + "/v1/models", "sk-k3-wrong")[0] == 401, url
        assert request(url + "/v1/models", key)[0] == 200, url
        # vLLM does not guard /health (nor /metrics): the firewall keeps them to the deployment.
        assert request(url + "/health")[0] == 200, url
    # Node 0 of the data-parallel engine is a front door of its own: every key works there.
    assert request(ENGINE + "/v1/models", other)[0] == 200


def test_router_worker_list_is_unchanged_by_an_unauthenticated_admin_call(deployed):
    key = deployed["keys"][0]
    status, before = request(ROUTER + "/list_workers", key)
    assert status == 200
    urls = json.loads(before)["urls"]
    assert sorted(urls) == sorted([PREFILL, DECODE])
    for who in (None, "sk-k3-wrong"):
        assert request(ROUTER + "/remove_worker?url=" + DECODE, who, method="POST")[0] == 401
        assert request(ROUTER + "/add_worker?url=http://10.77.0.99:9", who, method="POST")[0] == 401
        assert request(ROUTER + "/list_workers", who)[0] == 401
    status, after = request(ROUTER + "/list_workers", key)
    assert status == 200 and sorted(json.loads(after)["urls"]) == sorted(urls)


def test_no_key_in_any_argv_while_deploying(deployed):
    watch = deployed["watch"]
    assert watch.samples > 100, watch.samples
    assert watch.hits == []
    # And now, with every service running.
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            argv = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        assert not any(k.encode() in argv for k in deployed["keys"]), proc


def test_no_key_in_the_ansible_output_or_the_plan(deployed):
    keys = deployed["keys"]
    first, second = deployed["runs"]
    for out in (first, second):
        assert not any(k in out.stdout or k in out.stderr for k in keys)
    assert "censored due to no_log" in first.stdout
    files = [p for p in deployed["plan_dir"].rglob("*") if p.is_file()]
    assert any(p.name == "plan.json" for p in files) and len(files) > 5
    for path in files:
        text = path.read_text()
        assert not any(k in text for k in keys), path
    plan = json.loads((deployed["plan_dir"] / "plan.json").read_text())
    assert plan["auth"] == {"api_key": True, "keys": 2, "variable": "k3_api_key"}


def test_keys_only_in_0600_root_files_and_nowhere_in_the_journals(deployed):
    """On every host: the files holding a key (a grep over the whole file system but /proc, /sys and
    the read-only checkout) are the planned 0600 ones; no journal line holds a key."""
    out = run(
        VENV_BIN / "ansible-playbook",
        HERE / "scan.yml",
        "-i",
        INVENTORY,
        *deployed["args"],
        env={"ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.json", "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1"},
    )
    assert not any(k in out.stdout or k in out.stderr for k in deployed["keys"])
    last = json.loads(out.stdout)["plays"][0]["tasks"][-1]["hosts"]
    found = {h: r["ansible_facts"]["scan_result"] for h, r in last.items()}
    assert sorted(found) == ["k3-sb-decode", "k3-sb-dp0", "k3-sb-dp1", "k3-sb-front", "k3-sb-prefill"]
    for host, result in found.items():
        assert result["journal_hits"] == 0, host
        assert result["journal_lines"] > 100, host
        assert result["files"], host  # each host runs at least one service with a key
        for entry in result["files"]:
            path = entry["path"]
            assert path.startswith(ALLOWED[0]) and path.endswith(ALLOWED[1]), (host, path)
            assert (entry["mode"], entry["pw_name"]) == ("0600", "root"), (host, entry)
    engines = {e["path"] for e in found["k3-sb-dp0"]["files"]}
    assert engines == {"/etc/kimi-k3/engine.env", "/etc/kimi-k3/engine.api-keys.yaml"}
    assert {e["path"] for e in found["k3-sb-front"]["files"]} == {"/etc/kimi-k3/router.env"}


def test_second_run_changes_nothing(deployed):
    counts = recap(deployed["runs"][1].stdout)
    assert counts and all(c["changed"] == 0 for c in counts.values()), counts


def test_health_waits_and_verify_carry_the_key(deployed):
    text = deployed["runs"][0].stdout
    assert "KV cache moved" in text
    # The router's health route needs the key: site.yml got past its wait and verify's requests.
    assert "k3-router" in text and "failed=0" in text
    started = time.monotonic()
    assert request(ROUTER + "/health", deployed["keys"][0])[0] == 200
    assert time.monotonic() - started < 10


def connect(host, address, port):
    """From test host ``host``: open, refused (a reset) or timeout, for a TCP connection."""
    out = adhoc(
        host,
        "ansible.builtin.shell",
        "if timeout 5 bash -c 'exec 3<>/dev/tcp/%s/%d' 2>/tmp/k3-connect; then echo open; "
        "elif grep -q refused /tmp/k3-connect; then echo refused; else echo timeout; fi" % (address, port),
    )
    return out.stdout.split(">>", 1)[1].strip().splitlines()[0].strip()


def test_a_host_outside_the_deployment_is_refused_on_every_planned_port(deployed):
    for address, port in (
        ("10.77.0.11", 8000),  # the router, the endpoint: only clients (k3_client_networks) and the deployment
        ("10.77.0.11", 5000),  # the MetaService
        ("10.77.0.12", 8000),  # node 0 of the data-parallel engine
        ("10.77.0.14", 8100),  # prefill
        ("10.77.0.15", 8200),  # decode
    ):
        assert connect(OUTSIDE, address, port) == "refused", (address, port)
    # SSH and every port the plan does not give a service are the site's business: still reachable.
    assert connect(OUTSIDE, "10.77.0.11", 22) == "open"


def test_the_deployment_and_the_allowed_networks_reach_the_ports(deployed):
    assert connect("k3-sb-decode", "10.77.0.14", 8100) == "open"  # engine to engine
    # (each port the outside host was refused on is listening: the deployment's hosts get through)
    assert connect("k3-sb-dp1", "10.77.0.12", 8000) == "open"  # follower to node 0
    assert connect("k3-sb-prefill", "10.77.0.11", 5000) == "open"  # prefill to the MetaService
    assert connect("k3-sb-prefill", "10.77.0.15", 8200) == "open"
    # The controller (10.77.0.1) is in k3_client_networks: the endpoint answers it.
    assert request(ROUTER + "/v1/models", deployed["keys"][0])[0] == 200


def test_each_host_with_ports_has_the_table_and_a_flushed_one_comes_back(deployed):
    for host in ("k3-sb-front", "k3-sb-dp0", "k3-sb-prefill", "k3-sb-decode"):
        tables = adhoc(host, "ansible.builtin.command", "nft list tables")
        assert "table inet kimi_k3" in tables.stdout, (host, tables.stdout)
    # The headless follower has no planned port: no table.
    assert "kimi_k3" not in adhoc("k3-sb-dp1", "ansible.builtin.command", "nft list tables").stdout
    adhoc("k3-sb-prefill", "ansible.builtin.command", "nft delete table inet kimi_k3")
    assert connect(OUTSIDE, "10.77.0.14", 8100) == "open"
    again = playbook("site.yml", "--tags", "firewall", *deployed["args"])
    counts = recap(again.stdout)
    assert counts["k3-sb-prefill"]["changed"] == 1 and counts["k3-sb-decode"]["changed"] == 0, counts
    assert connect(OUTSIDE, "10.77.0.14", 8100) == "refused"


# A stand-in for nft on one host that refuses every table file (``-f``) and passes everything else
# to the real one: the unit that loads the table fails, as it would on a kernel without nf_tables.
FAKE_NFT = """mv /usr/sbin/nft /usr/sbin/nft.real && cat >/usr/sbin/nft <<'SH' && chmod 0755 /usr/sbin/nft
#!/bin/sh
case "$1" in -f) echo "Error: stand-in refusal of $2" >&2; exit 1;; esac
exec /usr/sbin/nft.real "$@"
SH"""


def test_a_table_the_host_refuses_fails_naming_the_host_with_the_units_journal(deployed):
    adhoc("k3-sb-prefill", "ansible.builtin.shell", "nft delete table inet kimi_k3 && " + FAKE_NFT)
    try:
        out = playbook("site.yml", "--tags", "firewall", *deployed["args"], check=False)
    finally:
        adhoc("k3-sb-prefill", "ansible.builtin.command", "mv /usr/sbin/nft.real /usr/sbin/nft")
    text = out.stdout + out.stderr
    assert out.returncode != 0
    assert "k3-sb-prefill: k3-firewall did not load /etc/kimi-k3/firewall.nft" in text, text[-3000:]
    assert "stand-in refusal of /etc/kimi-k3/firewall.nft" in text, text[-3000:]
    # Only the host that failed reports; the others stop with the play.
    assert "k3-sb-decode: k3-firewall did not load" not in text
    healed = playbook("site.yml", "--tags", "firewall", *deployed["args"])
    assert recap(healed.stdout)["k3-sb-prefill"]["changed"] == 1
    assert connect(OUTSIDE, "10.77.0.14", 8100) == "refused"


def test_firewall_absent_removes_the_table(deployed):
    out = playbook("%s/firewall_absent.yml" % HERE, *deployed["args"])
    assert recap(out.stdout)["k3-sb-front"]["changed"] >= 1
    assert connect(OUTSIDE, "10.77.0.14", 8100) == "open"
    tables = adhoc("k3-sb-prefill", "ansible.builtin.command", "nft list tables")
    assert "kimi_k3" not in tables.stdout
    # Back as the deployment had it, for the modules that share it (test_operate.py).
    playbook("site.yml", "--tags", "firewall", *deployed["args"])
    assert connect(OUTSIDE, "10.77.0.14", 8100) == "refused"
