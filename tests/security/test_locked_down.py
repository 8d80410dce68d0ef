"""Locked down, on the real sandbox: API keys (401 without, 200 with, the keys nowhere they must not be)
and the firewall (the planned ports refuse a host outside the deployment; SSH stays open).

Real test hosts, real vLLM, vllm-router and MetaService over SSH: the deployment (two random API
keys from a vault file, argv sampled while it deploys) is tests/helpers/secured_sandbox.py's fixture
``deployed``, shared with test_operate.py. Needs root.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest
from conftest import vllm_routes
from helpers.ansible_run import ansible_playbook
from helpers.sandbox_run import INVENTORY, on, playbook, recap
from helpers.secured_sandbox import FRONT_DOOR, ROUTER_ROUTES, request

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox needs root")

ROUTER = "http://10.77.0.11:8000"  # behind the front door: the deployment and k3_admin_networks only
ENGINE = "http://10.77.0.12:8000"  # node 0 of the data-parallel engine
PREFILL = "http://10.77.0.14:8100"
DECODE = "http://10.77.0.15:8200"
# The only files that may hold a key: the 0600 environment files and the front door's keys file.
ALLOWED = ("/etc/kimi-k3/", (".env", ".keys.conf"))
HERE = Path(__file__).resolve().parent
OUTSIDE = "k3-sb-outside"


CHAT = {"model": "kimi-k3-sandbox", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4}


def test_front_door_needs_a_key(deployed):
    key, other = deployed["keys"]
    assert request(FRONT_DOOR + "/v1/models")[0] == 401
    assert request(FRONT_DOOR + "/v1/models", "sk-k3-wrong")[0] == 401
    assert request(FRONT_DOOR + "/v1/chat/completions", None, CHAT)[0] == 401
    assert request(FRONT_DOOR + "/health")[0] == 401
    for good in (key, other, deployed["admin"]):
        status, text = request(FRONT_DOOR + "/v1/models", good)
        assert status == 200 and "kimi-k3-sandbox" in text
        status, text = request(FRONT_DOOR + "/v1/chat/completions", good, CHAT)
        assert status == 200, text
        assert json.loads(text)["usage"]["completion_tokens"] > 0
    # Any other route: 404 with a key (401 without one).
    assert request(FRONT_DOOR + "/tokenize", key, {"prompt": "Hi"})[0] == 404
    assert request(FRONT_DOOR + "/tokenize", None, {"prompt": "Hi"})[0] == 401


def test_answers_through_the_door_name_no_checkpoint_path(deployed):
    """vLLM's model list carries the checkpoint's path on disk (root): not past the front door (the
    router itself still shows it, to the admin networks)."""
    key = deployed["keys"][0]
    direct = request(ROUTER + "/v1/models", deployed["admin"])[1]
    assert "/srv/k3-models" in direct, direct  # what the door has to hide
    status, text = request(FRONT_DOOR + "/v1/models", key)
    assert status == 200 and "/srv/" not in text and "k3-models" not in text, text
    status, text = request(FRONT_DOOR + "/v1/chat/completions", key, dict(CHAT, stream=True))
    assert status == 200 and "data: [DONE]" in text, text[:500]


def test_answer_ids_name_no_internal_address(deployed):
    """vllm-router's P/D request id carries the prefill and decode workers' addresses, and vLLM puts it
    into every answer: the decode engine's guard answers with the uuid alone, whole and streamed."""
    key = deployed["keys"][0]
    internal = re.compile(r"10\.77\.0\.\d+|_addr_")
    status, text = request(FRONT_DOOR + "/v1/chat/completions", key, CHAT)
    assert status == 200 and re.fullmatch(r"chatcmpl-[0-9a-f]{32}", json.loads(text)["id"]), text[:300]
    status, text = request(FRONT_DOOR + "/v1/chat/completions", key, dict(CHAT, stream=True))
    events = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: {")]
    assert status == 200 and events and len({e["id"] for e in events}) == 1, text[:300]
    assert not internal.search(text), text[:300]


def refused_count(url, key, limit):
    """k3_requests_refused_total{limit=...} on an engine's /metrics (0 before the first refusal)."""
    text = request(url + "/metrics", key)[1]
    found = re.search(r'^k3_requests_refused_total\{limit="%s"\} ([0-9.e+]+)$' % limit, text, re.M)
    return float(found.group(1)) if found else 0.0


def test_a_request_over_the_limits_is_refused_clearly_and_counted(deployed):
    """n=1000 (the amplification an outside tester found: 9.9 s of engine time for a few hundred
    bytes), a best_of or max_tokens over the deployment's limits: a 400 naming the field and the
    limit, before any engine time, counted on the engines' /metrics; the next request gets 200."""
    key, admin = deployed["keys"][0], deployed["admin"]
    engines = (ENGINE, PREFILL, DECODE)
    before = {url: refused_count(url, admin, "n") for url in engines}
    for url in (FRONT_DOOR + "/v1/chat/completions", FRONT_DOOR + "/v1/completions"):
        body = dict(CHAT, n=1000) if url.endswith("chat/completions") else {"prompt": "Hi", "n": 1000}
        status, text = request(url, key, dict(body, model="kimi-k3-sandbox"))
        assert status == 400, (url, status, text[:500])
        assert "n=1000 is over this deployment's limit of 16" in text, text[:500]
    status, text = request(FRONT_DOOR + "/v1/chat/completions", key, dict(CHAT, max_tokens=10**7))
    assert status == 400 and "max_tokens=10000000 is over this deployment's limit of" in text, text[:500]
    after = {url: refused_count(url, admin, "n") for url in engines}
    assert sum(after.values()) - sum(before.values()) >= 2, (before, after)
    # The engine behind the data-parallel group holds the same limits when called directly.
    status, text = request(
        ENGINE + "/v1/completions", admin, {"model": "kimi-k3-sandbox", "prompt": "Hi", "best_of": 99}
    )
    assert status == 400 and "best_of=99 is over this deployment's limit of 16" in text, text[:500]
    assert refused_count(ENGINE, admin, "best_of") >= 1
    assert request(FRONT_DOOR + "/v1/chat/completions", key, CHAT)[0] == 200


def test_a_client_key_is_no_admin_key(deployed):
    key = deployed["keys"][0]
    assert request(FRONT_DOOR + "/list_workers", key)[0] == 403
    assert request(FRONT_DOOR + "/remove_worker?url=" + DECODE, key, method="POST")[0] == 403
    status, text = request(FRONT_DOOR + "/list_workers", deployed["admin"])
    assert status == 200 and sorted(json.loads(text)["urls"]) == sorted([PREFILL, DECODE])
    # Behind the door a client key is worth nothing: the router takes the admin key alone.
    assert request(ROUTER + "/v1/models", key)[0] == 401
    assert request(ROUTER + "/v1/models", deployed["admin"])[0] == 200


def test_plain_http_to_the_client_port_serves_nothing(deployed):
    status, text = request(FRONT_DOOR.replace("https:", "http:") + "/v1/models", deployed["keys"][0])
    assert status == 400 and "plain HTTP request was sent to HTTPS port" in text


def test_engines_take_the_admin_key_alone(deployed):
    key, other = deployed["keys"]
    for url in (ENGINE, PREFILL, DECODE):
        assert request(url + "/v1/models")[0] == 401, url
        assert request(url + "/v1/models", "sk-k3-wrong")[0] == 401, url
        assert request(url + "/v1/models", key)[0] == 401, url
        assert request(url + "/v1/models", deployed["admin"])[0] == 200, url
        # /health and /metrics stay open (read only): the firewall keeps them to the deployment.
        assert request(url + "/health")[0] == 200, url
    assert request(ENGINE + "/v1/models", other)[0] == 401


def probe(url, route, key=None):
    """One call of a route (its path parameters filled in), as a caller with ``key`` or none."""
    path = re.sub(r"\{[^}]+\}", "x", route["path"])
    body = {} if route["methods"] != "GET" else None
    return request(url + path, key, body, method=route["methods"])[0]


def test_no_engine_route_runs_for_a_caller_without_the_key(deployed):
    """Every route the pinned vLLM registers (read from vLLM itself), on every engine that serves HTTP:
    401 without a key or with a wrong one, but the read-only GET /health and GET /metrics."""
    key = deployed["keys"][0]
    routes = vllm_routes(key)
    assert len(routes) > 50
    open_routes = {("GET", "/health"), ("GET", "/metrics")}
    let_through = []
    for url in (ENGINE, PREFILL, DECODE):
        for route in routes:
            if (route["methods"], route["path"]) in open_routes:
                assert probe(url, route) == 200, (url, route["path"])
                continue
            for who in (None, "sk-k3-wrong"):
                status = probe(url, route, who)
                if status != 401:
                    let_through.append((url, route["methods"], route["path"], who and "wrong key", status))
    assert let_through == []
    # What was found open before the guard: a chat completion and a data-parallel rescale.
    chat = {"model": "kimi-k3-sandbox", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4}
    assert request(ENGINE + "/invocations", None, chat)[0] == 401
    assert request(DECODE + "/scale_elastic_ep", None, {"new_data_parallel_size": 1})[0] == 401
    # And the deployment's key still gets through on a route outside /v1.
    assert request(ENGINE + "/tokenize", deployed["admin"], {"model": "kimi-k3-sandbox", "prompt": "Hi"})[0] == 200


# A request every route of vllm-router takes as well formed (it reads the body and the query
# before the key: an empty body gets 422, a missing query field 400, without running anything).
ROUTER_BODY = {
    "model": "kimi-k3-sandbox",
    "messages": [{"role": "user", "content": "Hi"}],
    "prompt": "Hi",
    "input": "Hi",
    "query": "q",
    "documents": ["d"],
    "text": "Hi",
    "max_tokens": 1,
    "url": "http://10.77.0.99:9",
}
ROUTER_QUERY = "?url=http%3A%2F%2F10.77.0.99%3A9&session_id=x"


def test_no_router_route_runs_for_a_caller_without_the_key(deployed):
    let_through = []
    for method, path in ROUTER_ROUTES:
        url = ROUTER + re.sub(r"\{[^}]+\}", "x", path) + ROUTER_QUERY
        for who in (None, "sk-k3-wrong"):
            status = request(url, who, ROUTER_BODY if method != "GET" else None, method=method)[0]
            if status != 401:
                let_through.append((method, path, who and "wrong key", status))
    assert let_through == []


def test_the_front_door_passes_no_route_it_does_not_list(deployed):
    """Every route of the pinned vLLM and vllm-router at the front door: 401 without a valid key;
    with a client key only the client routes reach the router (the management routes 403, the rest
    404)."""
    key = deployed["keys"][0]
    routes = {(r["methods"], r["path"]) for r in vllm_routes(key)} | set(ROUTER_ROUTES)
    client_routes = {"/v1/chat/completions", "/v1/completions", "/v1/models", "/health"}
    management = {"/add_worker", "/remove_worker", "/list_workers", "/workers", "/flush_cache", "/get_loads"}
    management |= {"/get_server_info", "/get_model_info"}
    wrong = []
    for method, path in sorted(routes):
        route = {"methods": method, "path": path}
        for who in (None, "sk-k3-wrong"):
            if probe(FRONT_DOOR, route, who) != 401:
                wrong.append((method, path, who))
        if path in client_routes:
            continue  # served (tested above); a body of {} would only get the engines' 400
        status = probe(FRONT_DOOR, route, key)
        expected = 403 if path in management or path.startswith("/workers/") else 404
        if status != expected:
            wrong.append((method, path, "client key", status))
    assert wrong == []


def path_tricks(route):
    """The forms an attacker tries on ``route``: encoded, double-encoded, dot segments, mixed case,
    repeated slashes, and the reverse (a management route reached from a client route's path)."""
    head, tail = route[:2], route[2:]
    return [
        route.upper(),
        "/" + route,
        route.replace("/", "//"),
        "%s%%%02X%s" % (head, ord(tail[0]), tail[1:]),
        "%s%%25%02X%s" % (head, ord(tail[0]), tail[1:]),
        "/v1/models/..%s" % route,
        "/v1/models/..%%2F..%s" % route.replace("/", "%2F"),
        "/v1/models/%%2e%%2e%s" % route,
        "%s/..%%2Fv1%%2Fmodels" % route,
        "%s/../v1/models" % route,
        "%s/.%%2E/v1/chat/completions" % route,
    ]


def test_path_tricks_with_the_client_key_reach_no_management_route(deployed):
    """Every management route of the router, in every form an attacker tries, with the client key
    and each method: refused (400, 403 or 404), the router's workers untouched, and a keyed request
    still answered."""
    key, admin = deployed["keys"][0], deployed["admin"]
    before = json.loads(request(ROUTER + "/list_workers", admin)[1])
    management = ["/add_worker", "/remove_worker", "/list_workers", "/workers", "/workers/x", "/flush_cache"]
    management += ["/get_loads", "/get_server_info", "/get_model_info"]
    let_through = []
    for route in management:
        for path in path_tricks(route):
            for method in ("GET", "POST", "DELETE"):
                status = request(FRONT_DOOR + path, key, {} if method != "GET" else None, method=method)[0]
                if status not in (400, 403, 404):
                    let_through.append((method, path, status))
    assert let_through == []
    assert json.loads(request(ROUTER + "/list_workers", admin)[1]) == before
    assert request(FRONT_DOOR + "/v1/models", key)[0] == 200


def test_router_worker_list_is_unchanged_by_an_unauthenticated_admin_call(deployed):
    key = deployed["admin"]
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
        assert not any(k.encode() in argv for k in deployed["every_key"]), proc


def test_no_key_in_the_ansible_output_or_the_plan(deployed):
    keys = deployed["every_key"]
    first, second = deployed["runs"]
    for out in (first, second):
        assert not any(k in out.stdout or k in out.stderr for k in keys)
    # The requests that carried a key ran (without one the front door answers 401 and verify fails):
    # the key went into them and nowhere into the output.
    assert "answered" in first.stdout and "KV cache moved" in first.stdout
    files = [p for p in deployed["plan_dir"].rglob("*") if p.is_file()]
    assert any(p.name == "plan.json" for p in files) and len(files) > 5
    for path in files:
        text = path.read_text()
        assert not any(k in text for k in keys), path
    plan = json.loads((deployed["plan_dir"] / "plan.json").read_text())
    assert plan["auth"] == {
        "api_key": True,
        "keys": 2,
        "variable": "k3_api_key",
        "admin_key": True,
        "admin_variable": "k3_admin_api_key",
        "limits": {"n": 16, "best_of": 16, "max_tokens": plan["parameters"]["max_model_len"]},
    }


def test_keys_only_in_0600_root_files_and_nowhere_in_the_journals(deployed):
    """On every host: the files holding a key (a grep over the whole file system but /proc, /sys and
    the read-only checkout) are the planned 0600 ones; no journal line holds a key."""
    out = ansible_playbook(
        HERE / "scan.yml",
        *deployed["args"],
        inventory=INVENTORY,
        env={"ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.json", "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1"},
    )
    assert not any(k in out.stdout or k in out.stderr for k in deployed["every_key"])
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
    # Behind the front door an engine holds the admin key alone, in its environment file.
    assert {e["path"] for e in found["k3-sb-dp0"]["files"]} == {"/etc/kimi-k3/engine.env"}
    assert {e["path"] for e in found["k3-sb-front"]["files"]} == {
        "/etc/kimi-k3/router.env",
        "/etc/kimi-k3/front-door.keys.conf",
    }


def test_second_run_changes_nothing(deployed):
    counts = recap(deployed["runs"][1].stdout)
    assert counts and all(c["changed"] == 0 for c in counts.values()), counts


def test_health_waits_and_verify_carry_the_key(deployed):
    text = deployed["runs"][0].stdout
    assert "KV cache moved" in text
    # The router's and the front door's health routes need the key: site.yml got past their
    # waits and verify's requests.
    assert "k3-router" in text and "k3-front-door" in text and "failed=0" in text
    started = time.monotonic()
    assert request(ROUTER + "/health", deployed["admin"])[0] == 200
    assert request(FRONT_DOOR + "/health", deployed["keys"][0])[0] == 200
    assert time.monotonic() - started < 10


def connect(host, address, port):
    """From test host ``host``: open, refused (a reset) or timeout, for a TCP connection."""
    return connect_many(host, [(address, port)])[(address, port)]


def connect_many(host, targets, timeout=3):
    """From test host ``host``, all at once: {(address, port): open | refused | timeout}."""
    probes = " ".join(
        "( if timeout %d bash -c 'exec 3<>/dev/tcp/%s/%d' 2>/tmp/k3-connect-%s-%d; then r=open; "
        "elif grep -q refused /tmp/k3-connect-%s-%d; then r=refused; else r=timeout; fi; echo %s %d $r ) &"
        % (timeout, a, p, a, p, a, p, a, p)
        for a, p in targets
    )
    out = on(host, probes + " wait")
    found = {}
    for line in out.stdout.splitlines():
        address, port, result = line.split()
        found[(address, int(port))] = result
    assert set(found) == set(targets), out.stdout
    return found


def listening(host):
    """The TCP ports something listens on at ``host`` (ss), other than on loopback."""
    out = on(host, "ss -H -ltn")
    ports = set()
    for line in out.stdout.splitlines():
        local = line.split()[3]
        if not local.startswith(("127.", "[::1]")):
            ports.add(int(local.rsplit(":", 1)[1]))
    return ports


def test_a_host_outside_the_deployment_is_refused_on_every_planned_port(deployed):
    for address, port in (
        ("10.77.0.11", 8443),  # the front door: clients (k3_client_networks) and the deployment
        ("10.77.0.11", 8000),  # the router behind it
        ("10.77.0.11", 5000),  # the MetaService
        ("10.77.0.12", 8000),  # node 0 of the data-parallel engine
        ("10.77.0.14", 8100),  # prefill
        ("10.77.0.15", 8200),  # decode
        ("10.77.0.12", 9100),  # the node exporter: the monitoring host and the admins only
        ("10.77.0.12", 8082),  # the accelerator exporter (the sandbox's stand-in)
        ("10.77.0.18", 9090),  # Prometheus on the monitoring host: the monitoring hosts and the admins only
        ("10.77.0.18", 9093),  # Alertmanager
    ):
        assert connect(OUTSIDE, address, port) == "refused", (address, port)


def test_everything_else_is_dropped_ssh_is_the_admins_and_a_group_talks_within_itself(deployed):
    """Default deny: SSH answers the controller only; every other listener of a host (vLLM's
    ZMQ and engine-core ports, chosen at start) drops the outside host and the deployment's other
    hosts, and answers the members of its own engine group."""
    planned = {8000, 13389, 9100, 8082}
    internal = sorted(listening("k3-sb-dp0") - planned - {22})
    assert internal, "node 0 of the data-parallel engine listens on its internal ports"
    targets = [("10.77.0.12", port) for port in internal] + [("10.77.0.12", 22), ("10.77.0.18", 22)]
    for prober in (OUTSIDE, "k3-sb-prefill"):
        results = connect_many(prober, targets)
        assert set(results.values()) == {"timeout"}, (prober, results)
    member = connect_many("k3-sb-dp1", [("10.77.0.12", port) for port in internal] + [("10.77.0.12", 22)])
    assert member.pop(("10.77.0.12", 22)) == "timeout"  # a member is no admin
    assert set(member.values()) == {"open"}, member
    # The controller (k3_admin_networks) keeps SSH: every test's `on` goes through it.
    assert on("k3-sb-mon", "true").returncode == 0


def test_each_port_answers_the_hosts_the_plan_connects_and_refuses_the_others(deployed):
    """Each planned port is open to the hosts the plan has connect to it (the router to its engines,
    prefill to the MetaService), the monitoring host and the controller;
    a deployment host the plan does not connect there is refused like the outside host."""
    results = connect_many("k3-sb-front", [("10.77.0.14", 8100), ("10.77.0.15", 8200), ("10.77.0.12", 8000)])
    assert results == {("10.77.0.14", 8100): "open", ("10.77.0.15", 8200): "open", ("10.77.0.12", 8000): "refused"}
    results = connect_many("k3-sb-prefill", [("10.77.0.11", 5000), ("10.77.0.11", 6000), ("10.77.0.15", 8200)])
    assert results == {("10.77.0.11", 5000): "open", ("10.77.0.11", 6000): "open", ("10.77.0.15", 8200): "refused"}
    assert connect_many("k3-sb-decode", [("10.77.0.14", 8100), ("10.77.0.11", 5000)]) == {
        ("10.77.0.14", 8100): "refused",
        ("10.77.0.11", 5000): "refused",
    }
    # The monitoring host scrapes every planned port and the exporters; the others' exporters refuse.
    results = connect_many("k3-sb-mon", [("10.77.0.12", 9100), ("10.77.0.12", 8082), ("10.77.0.14", 8100)])
    assert set(results.values()) == {"open"}, results
    assert connect("k3-sb-decode", "10.77.0.12", 9100) == "refused"
    assert connect("k3-sb-decode", "10.77.0.18", 9093) == "refused"
    # The controller (10.77.0.1) is in k3_client_networks: the front door answers it.
    assert request(FRONT_DOOR + "/v1/models", deployed["keys"][0])[0] == 200


def test_the_transfer_ports_take_the_deployment_only(deployed):
    """A checkpoint's or an image's BitTorrent transfer listens on the seed's tracker port and every
    node's peer ports while it runs: a listener there (as aria2c would be) answers the deployment's
    hosts and refuses the outside host (TCP reset)."""
    on("k3-sb-dp0", "systemd-run --unit k3-test-peer --collect python3 -m http.server 6885 --bind 10.77.0.12")
    try:
        deadline = time.monotonic() + 20
        while connect("k3-sb-dp1", "10.77.0.12", 6885) != "open":
            assert time.monotonic() < deadline, "the stand-in peer did not listen"
            time.sleep(0.5)
        assert connect("k3-sb-prefill", "10.77.0.12", 6885) == "open"
        assert connect(OUTSIDE, "10.77.0.12", 6885) == "refused"
    finally:
        on("k3-sb-dp0", "systemctl stop k3-test-peer", check=False)


def test_each_host_with_ports_has_the_table_and_a_flushed_one_comes_back(deployed):
    for host in ("k3-sb-front", "k3-sb-dp0", "k3-sb-prefill", "k3-sb-decode", "k3-sb-mon"):
        tables = on(host, "nft list tables")
        assert "table inet kimi_k3" in tables.stdout, (host, tables.stdout)
    # The headless follower serves no port of its own: its table holds SSH (the admins), its
    # exporters' (the monitoring host and the admins), the transfers' and the fabric check's ports
    # (the deployment), and its group's other member; everything else is dropped.
    rules = on("k3-sb-dp1", "nft list table inet kimi_k3").stdout
    # (nft lists a one-element set as the element alone)
    ports = {tuple((a or b).split(", ")) for a, b in re.findall(r"tcp dport (?:\{ ([0-9, -]+) \}|(\d+))", rules)}
    assert ports == {("22",), ("8082", "9100"), ("5050", "6881-6889", "6969"), ("5201",)}, rules
    assert "policy drop;" in rules and 'ip saddr 10.77.0.12 accept comment "the other members' in rules, rules
    assert "@operators4 accept" in rules and "{ 8082, 9100 } ip saddr @deployment4" not in rules, rules
    on("k3-sb-prefill", "nft delete table inet kimi_k3")
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
    on("k3-sb-prefill", "nft delete table inet kimi_k3 && " + FAKE_NFT)
    try:
        out = playbook("site.yml", "--tags", "firewall", *deployed["args"], check=False)
    finally:
        on("k3-sb-prefill", "mv /usr/sbin/nft.real /usr/sbin/nft")
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
    tables = on("k3-sb-prefill", "nft list tables")
    assert "kimi_k3" not in tables.stdout
    # Back as the deployment had it, for the modules that share it (test_operate.py).
    playbook("site.yml", "--tags", "firewall", *deployed["args"])
    assert connect(OUTSIDE, "10.77.0.14", 8100) == "refused"
