"""Host preflight decisions (plugins/module_utils/preflight_*.py), table-tested; the probes over loopback."""

from __future__ import annotations

import importlib
import threading

import pytest

from ansible_collections.kimi_k3.serving.plugins.module_utils import (
    preflight_checks,
    preflight_common,
    preflight_connect,
    preflight_connections,
    preflight_listener,
    preflight_parse,
    preflight_proxies,
)

preflight_host = importlib.import_module("ansible_collections.kimi_k3.serving.plugins.modules.preflight_host")
preflight_probe = importlib.import_module("ansible_collections.kimi_k3.serving.plugins.modules.preflight_probe")


def svc(name, kind="vllm", role=None, ports=(), after=(), url=None, health=None, ranks=None, env=None, **extra):
    out = {
        "name": name,
        "kind": kind,
        "role": role or name,
        "unit": "k3-%s" % name,
        "runtime": extra.pop("runtime", "host"),
        "ports": [{"name": n, "port": p, "count": c} for n, p, c in ports],
        "after": list(after),
        "url": url,
        "health": {"url": health} if health else None,
        "ranks": ranks or {},
        "env": env or {},
    }
    out.update(extra)
    return out


def plan_of(hosts):
    """A plan from {host: (ip, [services])}, with its index, as the planner writes it."""
    plan = {"hosts": {h: {"ip": ip, "services": s} for h, (ip, s) in hosts.items()}, "index": {}}
    for host, (_ip, services) in hosts.items():
        for s in services:
            plan["index"]["%s/%s" % (host, s["name"])] = {
                "host": host,
                "name": s["name"],
                "kind": s["kind"],
                "unit": s["unit"],
                "health": s["health"],
            }
    return plan


# The sandbox: MetaService + router on front, DP2 engine (node 0 + headless follower), 1P1D.
SANDBOX = plan_of(
    {
        "front": (
            "10.77.0.11",
            [
                svc(
                    "metaservice",
                    kind="metaservice",
                    ports=[("meta", 5000, 1), ("config-store", 6000, 1), ("metrics", 8088, 1)],
                    health="http://10.77.0.11:8088/health",
                ),
                svc(
                    "router",
                    kind="router",
                    ports=[("http", 8000, 1)],
                    after=["prefill/prefill", "decode/decode"],
                    health="http://10.77.0.11:8000/health",
                    argv=["vllm-router", "--prefill", "http://10.77.0.14:8100", "--decode", "http://10.77.0.15:8200"],
                ),
            ],
        ),
        "dp0": (
            "10.77.0.12",
            [
                svc(
                    "engine",
                    ports=[("http", 8000, 1), ("dp-rpc", 13389, 1)],
                    url="http://10.77.0.12:8000",
                    health="http://10.77.0.12:8000/health",
                    ranks={"dp_address": "10.77.0.12"},
                )
            ],
        ),
        "dp1": ("10.77.0.13", [svc("engine", ranks={"dp_address": "10.77.0.12"}, after_started=["dp0/engine"])]),
        "prefill": (
            "10.77.0.14",
            [
                svc(
                    "prefill",
                    ports=[("http", 8100, 1)],
                    after=["front/metaservice"],
                    url="http://10.77.0.14:8100",
                    health="http://10.77.0.14:8100/health",
                )
            ],
        ),
        "decode": (
            "10.77.0.15",
            [
                svc(
                    "decode",
                    ports=[("http", 8200, 1)],
                    url="http://10.77.0.15:8200",
                    health="http://10.77.0.15:8200/health",
                )
            ],
        ),
    }
)

# MI355X P/D: vllm-router discovery, MoRIIO handshake/notify ranges (TP 2 here).
MORIIO = plan_of(
    {
        "router": ("192.0.2.1", [svc("router", kind="router", ports=[("http", 8000, 1), ("discovery", 36367, 1)])]),
        "p0": (
            "192.0.2.10",
            [
                svc(
                    "prefill",
                    ports=[("http", 6100, 1), ("moriio-handshake", 26000, 2), ("moriio-notify", 27000, 2)],
                    url="http://192.0.2.10:6100",
                    runtime="docker",
                    container={"ipc": "host", "shm_size": "256g"},
                )
            ],
        ),
        "d0": (
            "192.0.2.20",
            [
                svc(
                    "decode",
                    ports=[("http", 6100, 1), ("moriio-handshake", 26000, 2), ("moriio-notify", 27000, 2)],
                    url="http://192.0.2.20:6100",
                )
            ],
        ),
    }
)

# Ascend 8P8D (two of each): MetaService, Mooncake KV port ranges, DP RPC per group.
PD8 = plan_of(
    {
        "meta": (
            "198.51.100.9",
            [svc("metaservice", kind="metaservice", ports=[("meta", 5000, 1), ("config-store", 6000, 1)])],
        ),
        "p0": (
            "198.51.100.20",
            [
                svc(
                    "prefill",
                    ports=[("http", 9000, 1), ("dp-rpc", 13389, 1), ("kv", 36000, 4)],
                    ranks={"dp_address": "198.51.100.20"},
                    url="http://198.51.100.20:9000",
                )
            ],
        ),
        "p1": (
            "198.51.100.21",
            [svc("prefill", ports=[("http", 9000, 1), ("kv", 36000, 4)], ranks={"dp_address": "198.51.100.20"})],
        ),
        "d0": (
            "198.51.100.40",
            [
                svc(
                    "decode",
                    ports=[("http", 9100, 1), ("dp-rpc", 13489, 1)],
                    ranks={"dp_address": "198.51.100.40"},
                )
            ],
        ),
        "d1": ("198.51.100.41", [svc("decode", ports=[("http", 9100, 1)], ranks={"dp_address": "198.51.100.40"})]),
    }
)


def pairs_of(plan):
    return {(c["src"], c["dst"], c["port"]) for c in preflight_connections.connections(plan)}


# ------------------------------------------------------------------------------ connections
@pytest.mark.parametrize(
    ("plan", "expected"),
    [
        (
            SANDBOX,
            {
                ("front", "prefill", 8100),  # the router waits for prefill to be healthy, then sends it requests
                ("front", "decode", 8200),
                ("prefill", "front", 8088),  # prefill waits for the MetaService's health
                ("prefill", "front", 5000),  # and uses its meta and config-store ports
                ("prefill", "front", 6000),
                ("dp1", "dp0", 13389),  # the follower joins node 0
            },
        ),
        (
            MORIIO,
            {
                ("router", "p0", 6100),
                ("router", "d0", 6100),
                ("p0", "router", 36367),  # workers register with the discovery port
                ("d0", "router", 36367),
                ("d0", "p0", 26000),  # decode reaches every handshake and notify port of prefill
                ("d0", "p0", 26001),
                ("d0", "p0", 27000),
                ("d0", "p0", 27001),
            },
        ),
        (
            PD8,
            {("p1", "p0", 13389), ("d1", "d0", 13489), ("p0", "meta", 5000), ("p0", "meta", 6000)}
            | {("p1", "meta", 5000), ("p1", "meta", 6000)}
            | {(d, p, 36000 + i) for d in ("d0", "d1") for p in ("p0", "p1") for i in range(4)},
        ),
    ],
    ids=["sandbox", "mi355x-discovery-moriio", "ascend-8p8d"],
)
def test_connections_derived_from_the_plan(plan, expected):
    assert pairs_of(plan) == expected


def test_a_proxy_reaches_the_engines_its_argv_names_by_address_and_port():
    proxy = svc(
        "proxy",
        kind="proxy",
        argv=["python", "proxy.py", "--prefiller-hosts", "198.51.100.20", "--prefiller-ports", "9000"],
    )
    plan = plan_of(
        {
            "px": ("198.51.100.10", [proxy]),
            **{h: (PD8["hosts"][h]["ip"], PD8["hosts"][h]["services"]) for h in PD8["hosts"]},
        }
    )
    assert {(s, d, p) for s, d, p in pairs_of(plan) if s == "px"} == {("px", "p0", 9000)}


def test_connections_name_why_and_leave_out_a_host_itself():
    pairs = preflight_connections.connections(SANDBOX)
    assert all(c["src"] != c["dst"] for c in pairs)
    follower = next(c for c in pairs if c["src"] == "dp1")
    assert follower["ip"] == "10.77.0.12" and follower["name"] == "engine dp-rpc"
    assert "joins its data-parallel node 0 dp0/engine" in follower["why"]


def test_probes_give_each_host_its_listeners_connections_and_peers():
    probes = preflight_connections.probes(SANDBOX)
    front = {e["port"]: sorted(e["expect"]) for e in probes["front"]["listen"]}
    assert front == {5000: ["prefill"], 6000: ["prefill"], 8088: ["prefill"]}
    assert sorted(probes["front"]["talks_to"]["router"]) == ["10.77.0.14", "10.77.0.15"]
    assert probes["dp1"]["listen"] == [] and [c["port"] for c in probes["dp1"]["connect"]] == [13389]


def test_probes_under_limit_test_only_connections_between_the_hosts_taking_part():
    probes = preflight_connections.probes(SANDBOX, hosts=["dp1", "prefill"])
    # dp1's node 0 (dp0) is outside: nothing to connect to, nothing listens for it there.
    assert probes["dp1"]["connect"] == [] and probes["dp0"]["listen"] == []
    # prefill's MetaService is outside too; whom it talks to still counts (proxy variables).
    assert probes["prefill"]["connect"] == [] and "10.77.0.11" in probes["prefill"]["talks_to"]["prefill"]
    everyone = preflight_connections.probes(SANDBOX, hosts=list(SANDBOX["hosts"]))
    assert everyone == preflight_connections.probes(SANDBOX)


# ------------------------------------------------------------------------------ address and NIC
IFACES = [
    {"name": "lo", "state": "UNKNOWN", "addresses": ["127.0.0.1", "::1"]},
    {"name": "eth0", "state": "UP", "addresses": ["10.77.0.13", "fe80::1"]},
    {"name": "eth1", "state": "UP", "addresses": ["192.168.9.2"]},
]


@pytest.mark.parametrize(
    ("ip", "nic", "env", "expected"),
    [
        ("10.77.0.13", "eth0", {}, []),
        ("10.77.0.13", None, {"GLOO_SOCKET_IFNAME": "eth0", "NCCL_SOCKET_IFNAME": "=eth0"}, []),
        ("10.77.0.13", None, {"NCCL_SOCKET_IFNAME": "^docker,lo"}, []),  # exclusions are not checked
        ("10.77.0.13", "eth0,eth1", {}, []),
        (
            "10.77.0.13",
            "eth9",
            {},
            [
                "k3_nic is eth9, but 10.77.0.13 is on eth0: there is no interface eth9 on this host "
                "(it has eth0, eth1, lo). Fix: set k3_nic to eth0"
            ],
        ),
        (
            "10.77.0.13",
            "eth1",
            {"GLOO_SOCKET_IFNAME": "eth1", "HCCL_SOCKET_IFNAME": "eth1"},
            [
                "k3_nic, GLOO_SOCKET_IFNAME (engine), HCCL_SOCKET_IFNAME (engine) is eth1, but 10.77.0.13 is on eth0: "
                "eth1 does not own the planned address 10.77.0.13"
            ],
        ),
        (
            "10.77.0.13",
            "eth0",
            {"TP_SOCKET_IFNAME": "eth1"},
            ["TP_SOCKET_IFNAME (engine) is eth1", "or correct the variable in k3_env"],
        ),
        (
            "10.77.0.99",
            "eth0",
            {},
            ["k3_ip: the planned address 10.77.0.99 is not an address of this host (it has: lo 127.0.0.1, ::1; eth0"],
        ),
    ],
)
def test_address_and_interface(ip, nic, env, expected):
    problems = preflight_common.messages(
        preflight_checks.check_address("dp1", ip, IFACES, [svc("engine", env=env)], nic)
    )
    if not expected:
        assert problems == []
    else:
        assert len(problems) == 1, problems
        for part in expected:
            assert part in problems[0]
        assert problems[0].startswith("host dp1: ")


def test_an_interface_that_is_down():
    down = [dict(IFACES[1], state="DOWN")]
    [problem] = preflight_checks.check_address("dp1", "10.77.0.13", down, [], "eth0")
    assert "eth0 owns the planned address 10.77.0.13 but is down" in str(problem)


def test_ip_json_parsing():
    text = (
        '[{"ifindex":1,"ifname":"lo","operstate":"UNKNOWN","addr_info":[{"family":"inet","local":"127.0.0.1"}]},'
        '{"ifindex":2,"ifname":"eth0","operstate":"UP","addr_info":[{"family":"inet","local":"10.77.0.13",'
        '"prefixlen":24},{"family":"inet6","local":"fe80::6b:33ff:fe00:d"}]}]'
    )
    assert preflight_parse.parse_ip_json(text)[1] == {
        "name": "eth0",
        "state": "UP",
        "addresses": ["10.77.0.13", "fe80::6b:33ff:fe00:d"],
    }


# ------------------------------------------------------------------------------ ports
PROC_NET_TCP = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1001 1 0 100 0 0 10 0
   1: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1002 1 0 100 0 0 10 0
   2: 0D004D0A:8CA0 0B004D0A:1F40 01 00000000:00000000 00:00000000 00000000     0        0 1003 1 0 100 0 0 10 0
"""


def test_proc_net_tcp_listeners_only():
    assert preflight_parse.parse_proc_net_tcp(PROC_NET_TCP) == [
        {"port": 8000, "address": "0.0.0.0", "inode": "1001"},
        {"port": 8080, "address": "127.0.0.1", "inode": "1002"},
    ]
    six = "sl local\n 0: 00000000000000000000000001000000:1F40 00000000000000000000000000000000:0000 0A 0 0 0 0 0 7\n"
    assert preflight_parse.parse_proc_net_tcp(six)[0]["address"] == "::1"


@pytest.mark.parametrize(
    ("cgroup", "expected"),
    [
        ("0::/system.slice/k3-prefill.service\n", ("k3-prefill", None)),
        ("0::/system.slice/docker-%s.scope\n" % ("ab" * 32), (None, "ab" * 32)),
        ("12:pids:/docker/%s\n" % ("cd" * 32), (None, "cd" * 32)),
        ("0::/user.slice/user-0.slice/session-3.scope\n", (None, None)),
    ],
)
def test_unit_of_cgroup(cgroup, expected):
    assert preflight_parse.unit_of_cgroup(cgroup) == expected


PREFILL = svc("prefill", ports=[("http", 8100, 1), ("kv", 36000, 4)])


@pytest.mark.parametrize(
    ("listeners", "expected"),
    [
        ([], []),
        ([{"port": 8100, "pid": 10, "command": "vllm serve", "unit": "k3-prefill"}], []),  # its own unit
        (
            [{"port": 8100, "pid": 4242, "command": "python3 -m http.server 8100", "unit": None}],
            [
                "host p: port 8100: planned for prefill (http) and held by pid 4242 (python3 -m http.server 8100), "
                "not by k3-prefill. Fix: stop that process or free the port (kill 4242)"
            ],
        ),
        (
            [
                {"port": 36001, "pid": 7, "command": "mooncake", "unit": "k3-decode"},
                {"port": 36002, "pid": 7, "command": "mooncake", "unit": "k3-decode"},
            ],
            ["port 36001-36002: planned for prefill (kv) and held by pid 7 (mooncake, unit k3-decode)"],
        ),
        (
            [{"port": 8100, "pid": None, "command": None, "unit": None}],
            ["held by a process this host does not show"],
        ),
        # The listener of a preflight that just ran (it exits on its own).
        ([{"port": 8100, "pid": 9, "command": "python3 AnsiballZ", "comm": "k3-preflight", "unit": None}], []),
    ],
)
def test_ports(listeners, expected):
    problems = preflight_common.messages(preflight_checks.check_ports("p", [PREFILL], listeners))
    assert len(problems) == len(expected)
    for problem, part in zip(problems, expected, strict=True):
        assert part in problem


# ------------------------------------------------------------------------------ proxies
@pytest.mark.parametrize(
    ("no_proxy", "address", "covered"),
    [
        ("10.77.0.11,10.77.0.14", "10.77.0.14", True),
        ("10.77.0.0/24", "10.77.0.14", True),
        ("*", "10.77.0.14", True),
        ("localhost,127.0.0.1", "10.77.0.14", False),
        (".cluster.local", "node1.cluster.local", True),
        ("cluster.local", "node1.cluster.local", True),
        ("", "10.77.0.14", False),
        ("fd00::/8", "fd00::5", True),
    ],
)
def test_no_proxy(no_proxy, address, covered):
    assert preflight_proxies.no_proxy_covers(no_proxy, address) is covered


TALKS = {"router": ["10.77.0.14", "10.77.0.15"]}


@pytest.mark.parametrize(
    ("service", "host_sources", "docker_sources", "expected"),
    [
        (svc("router", kind="router"), [], [], []),
        (
            svc("router", kind="router", env={"https_proxy": "http://user:secret@proxy:3128"}),
            [],
            [],
            [
                "host front: k3_env.https_proxy: https_proxy=http://***@proxy:3128 (set in the planned environment "
                "(k3_env or the profile)) would send router's traffic to 10.77.0.14, 10.77.0.15, 10.77.0.11 through "
                "the proxy. Fix: remove https_proxy from k3_env"
            ],
        ),
        (
            svc("router", kind="router", env={"HTTP_PROXY": "http://proxy:3128", "no_proxy": "10.77.0.0/24"}),
            [],
            [],
            [],
        ),
        (
            svc("router", kind="router"),
            [("/etc/environment", {"http_proxy": "http://proxy:3128", "no_proxy": "10.77.0.14"})],
            [],
            [
                "http_proxy: http_proxy=http://proxy:3128 (set in /etc/environment) would send router's traffic to "
                "10.77.0.15, 10.77.0.11 through the proxy. Fix: remove http_proxy from /etc/environment, or add "
                "10.77.0.15,10.77.0.11 to its no_proxy/NO_PROXY"
            ],
        ),
        # The service's own no_proxy exempts its peers even when the proxy is inherited.
        (
            svc("router", kind="router", env={"NO_PROXY": "10.77.0.0/24"}),
            [("systemd's manager environment", {"HTTPS_PROXY": "http://proxy:3128"})],
            [],
            [],
        ),
        # The recipe's shell unset removes inherited proxies.
        (
            svc("router", kind="router", shell={"unset": ["http_proxy", "HTTP_PROXY"]}),
            [("/etc/environment", {"http_proxy": "http://proxy:3128", "HTTP_PROXY": "http://proxy:3128"})],
            [],
            [],
        ),
        # Docker runtime: the host's environment does not reach the container; docker's proxies do.
        (
            svc("router", kind="router", runtime="docker"),
            [("/etc/environment", {"http_proxy": "http://proxy:3128"})],
            [],
            [],
        ),
        (
            svc("router", kind="router", runtime="docker"),
            [],
            [("/root/.docker/config.json (proxies the docker client injects)", {"HTTPS_PROXY": "http://p:1"})],
            ["HTTPS_PROXY: HTTPS_PROXY=http://p:1 (set in /root/.docker/config.json"],
        ),
        (svc("router", kind="router", env={"ftp_proxy": "http://proxy:21"}), [], [], []),
    ],
)
def test_proxies(service, host_sources, docker_sources, expected):
    problems = preflight_common.messages(
        preflight_proxies.check_proxies("front", "10.77.0.11", [service], TALKS, host_sources, docker_sources)
    )
    assert len(problems) == len(expected), problems
    for problem, part in zip(problems, expected, strict=True):
        assert part in problem


def test_environment_files():
    text = "# comment\nPATH=\"/usr/bin\"\nexport https_proxy=http://p:1\nNO_PROXY='a,b'\nweird line\nX=$'a\\tb'\n"
    assert preflight_parse.parse_env_lines(text) == {
        "PATH": "/usr/bin",
        "https_proxy": "http://p:1",
        "NO_PROXY": "a,b",
        "X": "a\tb",
    }
    dropin = (
        '[Service]\nEnvironment="HTTP_PROXY=http://p:3128" "NO_PROXY=localhost"\nEnvironment=A=1\n'
        "[Unit]\nEnvironment=B=2\n"
    )
    assert preflight_parse.parse_unit_environment(dropin) == {
        "HTTP_PROXY": "http://p:3128",
        "NO_PROXY": "localhost",
        "A": "1",
    }
    assert preflight_parse.docker_client_proxies(
        {"proxies": {"default": {"httpsProxy": "http://p:1", "noProxy": "*"}}}
    ) == {
        "HTTPS_PROXY": "http://p:1",
        "https_proxy": "http://p:1",
        "NO_PROXY": "*",
        "no_proxy": "*",
    }
    assert preflight_parse.docker_daemon_proxies({"proxies": {"http-proxy": "http://p:1"}}) == {
        "HTTP_PROXY": "http://p:1"
    }


# ------------------------------------------------------------------------------ clock
@pytest.mark.parametrize(
    ("host_time", "expected"),
    [(1000.0, None), (1001.9, None), (998.1, None), (1003.5, "3.5 s ahead of"), (990.0, "10.0 s behind")],
)
def test_clock(host_time, expected):
    problems = preflight_common.messages(preflight_checks.check_clock("dp0", host_time, 1000.0, 2))
    if expected is None:
        assert problems == []
    else:
        [problem] = problems
        assert expected in problem and "preflight_clock_skew_max" in problem


def test_process_start_time_is_not_in_the_future():
    import time

    assert preflight_probe.process_start_time() <= time.time()


# ------------------------------------------------------------------------------ disk and /dev/shm
GB = 1024**3


@pytest.mark.parametrize(
    ("folders", "expected"),
    [
        ([{"path": "/models/K3", "exists": True, "fs": 1, "free": 100 * GB}], []),
        (
            [{"path": "/models/K3", "exists": False, "fs": 1, "free": 100 * GB}],
            ["host n: k3_model_path: the checkpoint folder /models/K3 does not exist"],
        ),
        (
            [{"path": "/models/D", "draft": True, "exists": False, "fs": 1, "free": 100 * GB}],
            ["k3_draft_model_path: the checkpoint folder /models/D does not exist"],
        ),
        (
            [{"path": "/models/K3", "exists": True, "fs": 1, "free": 2 * GB}],
            ["the filesystem of /models/K3 has 2.0 GiB free; at least 5.0 GiB must stay free"],
        ),
        # Staged: the space still to copy plus the minimum must be free; the folder need not exist yet.
        (
            [
                {
                    "path": "/models/K3",
                    "exists": False,
                    "source": "/srv/K3",
                    "source_exists": True,
                    "need": 50 * GB,
                    "fs": 1,
                    "free": 100 * GB,
                }
            ],
            [],
        ),
        (
            [
                {
                    "path": "/models/K3",
                    "exists": True,
                    "source": "/srv/K3",
                    "source_exists": True,
                    "need": 60 * GB,
                    "fs": 1,
                    "free": 100 * GB,
                },
                {
                    "path": "/models/D",
                    "exists": False,
                    "source": "/srv/D",
                    "source_exists": True,
                    "need": 38 * GB,
                    "fs": 1,
                    "free": 100 * GB,
                },
            ],
            [
                "the filesystem of /models/K3, /models/D has 100.0 GiB free and staging needs 98.0 GiB more; "
                "at least 5.0 GiB must stay free (preflight_min_free_bytes). Fix: free 3.0 GiB there"
            ],
        ),
        (
            [
                {
                    "path": "/models/K3",
                    "exists": False,
                    "source": "/srv/K3",
                    "source_exists": False,
                    "fs": 1,
                    "free": 100 * GB,
                }
            ],
            ["k3_model_weights_sources: /models/K3 is to be staged from /srv/K3, which does not exist on this host"],
        ),
    ],
)
def test_space(folders, expected):
    problems = preflight_common.messages(preflight_checks.check_space("n", folders, 5 * GB))
    assert len(problems) == len(expected), problems
    for problem, part in zip(problems, expected, strict=True):
        assert part in problem


@pytest.mark.parametrize(
    ("text", "value"),
    [("1g", GB), ("256g", 256 * GB), ("64m", 64 * 1024**2), ("512MiB", 512 * 1024**2), ("1024", 1024), (2048, 2048)],
)
def test_parse_size(text, value):
    assert preflight_checks.parse_size(text) == value


@pytest.mark.parametrize(
    ("service", "shm", "expected"),
    [
        (svc("engine"), 2 * GB, None),  # host runtime: preflight_shm_bytes (1 GiB)
        (
            svc("engine"),
            64 * 1024**2,
            "/dev/shm is 64.0 MiB; engine (host runtime, preflight_shm_bytes) needs at least",
        ),
        (svc("router", kind="router"), 64 * 1024**2, None),  # only vLLM needs it
        (
            MORIIO["hosts"]["p0"]["services"][0],
            128 * GB,
            "prefill (--ipc host, planned --shm-size 256g) needs at least 256.0 GiB",
        ),
        # Docker without --ipc host: the container gets a /dev/shm of its own.
        (svc("engine", runtime="docker", container={"shm_size": "1g"}), 64 * 1024**2, None),
        (svc("engine"), None, "there is no /dev/shm"),
    ],
)
def test_shm(service, shm, expected):
    problems = preflight_common.messages(preflight_checks.check_shm("n", [service], shm, GB))
    if expected is None:
        assert problems == []
    else:
        [problem] = problems
        assert expected in problem


# ------------------------------------------------------------------------------ the connection test, on loopback
def free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_listen_and_connect_over_loopback():
    port = free_port()
    result = {}
    thread = threading.Thread(
        target=lambda: result.update(
            preflight_listener.listen([{"port": port, "name": "x http", "expect": ["a"]}], "b", 10)
        )
    )
    thread.start()
    [answer] = preflight_connect.connect(
        [{"dst": "b", "ip": "127.0.0.1", "port": port, "name": "x http", "why": "a talks to b"}], "a", 5
    )
    thread.join(10)
    assert answer["ok"] and answer["answered_by"] == "b"
    assert result["listened"] == [port] and result["seen"] == ["a:%d" % port] and result["missing"] == []


def test_a_detached_listener_is_up_when_spawn_returns_and_greets_the_expected_hosts():
    ports = [free_port(), free_port()]
    bound = preflight_listener.spawn_listener([{"port": p, "name": "x", "expect": ["a"]} for p in ports], "b", 10)
    token = bound.pop("token")
    assert bound == {"listened": sorted(ports), "held": [], "errors": {}} and token
    targets = [{"dst": "b", "ip": "127.0.0.1", "port": p, "name": "x", "why": "w"} for p in ports]
    answers = preflight_connect.connect(targets, "a", 0.5)  # no retry needed: already listening
    assert [a["answered_by"] for a in answers] == ["b", "b"]
    # Every expected host came: the listener is gone.
    import socket
    import time

    for _unused in range(50):
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", ports[0])) != 0:
                break
        time.sleep(0.1)
    else:
        raise AssertionError("the listener is still up")


def test_a_listener_still_waiting_is_stopped_with_its_token_only():
    import socket

    port = free_port()
    bound = preflight_listener.spawn_listener([{"port": port, "name": "x", "expect": ["never"]}], "b", 30)
    preflight_listener.stop_listener(port, "wrong")  # ignored
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) == 0  # still up
    assert preflight_listener.stop_listener(port, bound["token"])
    import time

    for _unused in range(50):
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) != 0:
                break
        time.sleep(0.1)
    else:
        raise AssertionError("the listener is still up")


def test_a_port_in_use_is_answered_by_its_holder():
    import socket

    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    port = holder.getsockname()[1]
    try:
        listened = preflight_listener.listen([{"port": port, "name": "x", "expect": ["a"]}], "b", 0.2)
        [answer] = preflight_connect.connect(
            [{"dst": "b", "ip": "127.0.0.1", "port": port, "name": "x", "why": "w"}], "a", 3
        )
    finally:
        holder.close()
    assert listened["held"] == [port] and listened["listened"] == []
    assert answer["ok"] and answer["answered_by"] is None


def test_a_port_known_to_be_held_is_not_waited_on():
    import socket
    import time

    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(4)
    port = holder.getsockname()[1]
    target = {"dst": "b", "ip": "127.0.0.1", "port": port, "name": "x", "why": "w"}
    try:
        start = time.monotonic()
        [answer] = preflight_connect.connect([target], "a", 3, held={"b": [port]})
        quick = time.monotonic() - start
        start = time.monotonic()
        [waited] = preflight_connect.connect([target], "a", 3, held={"c": [port]})
        slow = time.monotonic() - start
    finally:
        holder.close()
    assert answer == dict(target, ok=True, answered_by=None) and waited["ok"]
    # Unknown as held (another host's port), the connection waits for a greeting that does not come.
    assert quick < 0.2 <= slow, (quick, slow)


def test_nothing_listening_is_refused_after_retrying():
    port = free_port()
    results = preflight_connect.connect(
        [{"dst": "b", "ip": "127.0.0.1", "port": port, "name": "x http", "why": "a needs b"}], "a", 0.6
    )
    [problem] = preflight_common.messages(preflight_connections.connection_problems("a", results, 0.6))
    assert problem.startswith("host a: connection: TCP to b 127.0.0.1 port %d (x http) refused" % port)
    assert "needed because a needs b. Fix: allow TCP from a to 127.0.0.1 port %d" % port in problem


def test_connection_problems_are_grouped_per_destination():
    results = [
        {
            "dst": "p0",
            "ip": "10.0.0.1",
            "port": 36000 + i,
            "name": "prefill kv",
            "why": "decode pulls",
            "ok": False,
            "error": "timed out",
        }
        for i in range(16)
    ] + [
        {
            "dst": "p0",
            "ip": "10.0.0.1",
            "port": 9000,
            "name": "prefill http",
            "why": "w",
            "ok": True,
            "answered_by": "p9",
        }
    ]
    problems = preflight_common.messages(preflight_connections.connection_problems("d0", results, 5))
    assert len(problems) == 2
    assert "10.0.0.1:9000 (prefill http) was answered by p9, not by p0" in problems[0]
    assert "port 36000-36015 (prefill kv) timed out after 5 s (a firewall drops it or there is no route)" in problems[1]


def test_the_pairs_action_works_out_the_connections_on_the_controller_and_counts_the_untested():
    from ansible_collections.kimi_k3.serving.plugins.action import preflight_pairs

    every = preflight_pairs.preflight_pairs(SANDBOX)
    assert every["pairs"] == preflight_connections.connections(SANDBOX) and every["untested"] == 0
    assert every["hosts"] == preflight_connections.probes(SANDBOX)
    limited = preflight_pairs.preflight_pairs(SANDBOX, ["dp1", "prefill"])
    inside = [p for p in every["pairs"] if {p["src"], p["dst"]} <= {"dp1", "prefill"}]
    assert limited["untested"] == len(every["pairs"]) - len(inside) > 0
    assert limited["hosts"] == preflight_connections.probes(SANDBOX, hosts=["dp1", "prefill"])


def test_preflight_host_reads_unit_states_in_order():
    class Module:
        def get_bin_path(self, name):
            return "/bin/" + name

        def run_command(self, argv):
            assert argv == ["/bin/systemctl", "is-active", "k3-a.service", "k3-b.service"]
            return 3, "active\nfailed\n", ""

    assert preflight_host.unit_states(Module(), ["k3-a.service", "k3-b.service"]) == ["active", "failed"]
    assert preflight_host.unit_states(Module(), []) == []
