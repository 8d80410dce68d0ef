"""Two monitoring hosts' Alertmanagers as one cluster over mutual TLS, and a stranger kept out.

The real Alertmanager of the distribution's package (the one the monitoring hosts install,
unpacked from .cache/debian-debs), run on loopback addresses with the flags and the
``--cluster.tls-config`` document the monitoring stage writes for a plan with two monitoring
hosts, and the sandbox's own certificate maker (tools/sandbox_tls.py). A silence set on one is
on the other; a third Alertmanager with a certificate of another CA dials in and is refused.
Debian's build reads its default template from /usr/share/prometheus: each runs in a mount
namespace of its own where the package's /usr/share is there (root, as on the hosts).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request

import pytest
import yaml
from conftest import unpacked_program
from helpers.listening import free_port
from helpers.pki import sandbox_tls

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability import _alertmanager as alertmanager
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability import _alertmanager_cluster as cluster

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="a mount namespace needs root")

PLAN = {
    "monitoring": {
        "hosts": [{"host": "mon-a", "ip": "127.0.0.2"}, {"host": "mon-b", "ip": "127.0.0.3"}],
    }
}


def api(web, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        "http://%s%s" % (web, path), data=data, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=5) as answer:
        return json.loads(answer.read() or b"null")


def wait_for(check, what, timeout=40):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise AssertionError("not within %ds: %s" % (timeout, what))


def silence(web, value):
    now = time.time()
    fmt = "%Y-%m-%dT%H:%M:%SZ"
    return api(
        web,
        "/api/v2/silences",
        {
            "matchers": [{"name": "alertname", "value": value, "isRegex": False, "isEqual": True}],
            "startsAt": time.strftime(fmt, time.gmtime(now - 60)),
            "endsAt": time.strftime(fmt, time.gmtime(now + 3600)),
            "createdBy": "test",
            "comment": "cluster test",
        },
    )["silenceID"]


def silenced(web):
    return {m["value"] for s in api(web, "/api/v2/silences") for m in s["matchers"]}


@pytest.fixture(scope="module")
def binary(tmp_path_factory):
    return unpacked_program(
        "prometheus-alertmanager", "usr/bin/prometheus-alertmanager", tmp_path_factory.mktemp("alertmanager")
    )


@pytest.fixture
def members(binary, tmp_path):
    """Start Alertmanagers by ``(host, plan, pki folder[, CA])``; yields the starter, stops them all."""
    port = free_port()
    config = tmp_path / "alertmanager.yml"
    config.write_text(yaml.safe_dump(alertmanager.alertmanager_config([], {})[0]))
    running = []

    def start(host, plan, pki, trusted=None):
        peer = cluster.peering(plan, host, tls_ready=True)
        tls_file = tmp_path / ("%s-cluster.yml" % host)
        cert, key, ca = pki / "monitoring.pem", pki / "monitoring.key", trusted or pki / "ca.pem"
        tls_file.write_text(yaml.safe_dump(cluster.cluster_tls(str(cert), str(key), str(ca))))
        web = "%s:%d" % (peer["address"], free_port())
        share = binary.parents[1] / "share"
        argv = [
            "unshare",
            "--mount",
            "sh",
            "-c",
            'mount --bind "$0" /usr/share && exec "$@"',
            str(share),
            str(binary),
            "--config.file=%s" % config,
            "--storage.path=%s" % (tmp_path / host),
            "--web.listen-address=%s" % web,
            *cluster.cluster_flags(peer, str(tls_file), port=port),
        ]
        log = open(tmp_path / ("%s.log" % host), "w")  # noqa: SIM115 (kept open while it runs)
        running.append((subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT), log))
        wait_for(lambda: api(web, "/api/v2/status"), "%s answers" % host)
        return web

    yield start
    for process, log in running:
        process.terminate()
        process.wait(timeout=10)
        log.close()


def peers(web):
    return sorted(p["address"].rsplit(":", 1)[0] for p in api(web, "/api/v2/status")["cluster"]["peers"])


def test_two_monitoring_hosts_share_silences_over_tls_and_a_stranger_is_refused(members, tmp_path):
    tls = sandbox_tls()
    own, other = tmp_path / "pki", tmp_path / "stranger-pki"
    tls.make(str(own), "127.0.0.0/29")
    tls.make(str(other), "127.0.0.0/29")  # another CA: a certificate as good, but not ours
    first = members("mon-a", PLAN, own)
    second = members("mon-b", PLAN, own)
    wait_for(lambda: peers(first) == ["127.0.0.2", "127.0.0.3"], "the two are one cluster")
    assert peers(second) == ["127.0.0.2", "127.0.0.3"]
    silence(first, "EngineDown")
    wait_for(lambda: "EngineDown" in silenced(second), "a silence set on one is on the other")

    # A stranger that trusts our CA and dials in with another CA's certificate: the server's
    # demand for a client certificate of its own CA is what keeps it out.
    stranger_plan = {"monitoring": {"hosts": [{"host": "intruder", "ip": "127.0.0.4"}, PLAN["monitoring"]["hosts"][0]]}}
    stranger = members("intruder", stranger_plan, other, trusted=own / "ca.pem")
    silence(stranger, "IntruderSilence")
    time.sleep(5)
    assert peers(first) == ["127.0.0.2", "127.0.0.3"]
    assert peers(stranger) == ["127.0.0.4"]
    assert "IntruderSilence" not in silenced(first) | silenced(second)


def test_one_monitoring_host_or_no_tls_has_no_cluster_listener():
    one = {"monitoring": {"hosts": [PLAN["monitoring"]["hosts"][0]]}}
    assert cluster.peering(one, "mon-a", tls_ready=True) is None
    assert cluster.peering(PLAN, "mon-a", tls_ready=False) is None
    assert cluster.cluster_flags(None, "/x") == ["--cluster.listen-address="]
    flags = cluster.cluster_flags(cluster.peering(PLAN, "mon-b", tls_ready=True), "/etc/c.yml")
    assert flags == [
        "--cluster.listen-address=127.0.0.3:9094",
        "--cluster.advertise-address=127.0.0.3:9094",
        "--cluster.peer=127.0.0.2:9094",
        "--cluster.tls-config=/etc/c.yml",
    ]
