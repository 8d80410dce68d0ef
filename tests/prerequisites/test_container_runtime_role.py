"""The container_runtime role in site.yml's prerequisites stage, on real test hosts over SSH.

Real: the hosts, apt installing Debian's docker.io (from the local copy of Debian's packages that
tools/fetch_debs.sh makes at install time: the hosts' distribution, as on an air-gapped site), the
Docker engine under systemd, community.docker loading, saving and inspecting images, and the image
brought from the node that loaded it to the other by BitTorrent (aria2, mktorrent, opentracker).
TEST DOUBLES: the NVIDIA packages the nvidia role meets on these GB200-class hosts (r580
installed), and the engine image, a tiny docker-save archive under the planned tag
vllm/vllm-openai:kimi-k3, in two builds (tests/prerequisites/build_repo.py); and Docker Hub, a
registry on the controller (the distribution's own, which the site's mirror is too) holding build
a, which the hosts reach as the mirror's remote (they have no route out).
"""

from __future__ import annotations

import json
import os

import pytest
from conftest import unpacked_program
from doubles import REPO, TestHosts, recap
from helpers.listening import free_port
from helpers.registry import blob_gets, forget, plain, podman, push, serve

HOSTS = TestHosts(
    "hosts-docker.txt",
    "inventory-docker",
    {"k3-dk-0": "nvidia-driver-580-open", "k3-dk-1": "nvidia-driver-580-open"},
    debian=True,
)
NAMES = ("k3-dk-0", "k3-dk-1")
IMAGE = "vllm/vllm-openai:kimi-k3"
# The controller's address on the hosts' bridge (tools/sandbox.sh: network 10.77.2.0/24).
CONTROLLER = "10.77.2.1"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the test hosts need root")


@pytest.fixture(scope="module")
def test_hosts():
    yield from HOSTS.session()


def image_id(hosts, host):
    return json.loads(hosts.shell(host, "docker image inspect %s" % IMAGE))[0]["Id"]


def test_docker_from_the_distribution_with_the_image_loaded_everywhere(test_hosts):
    out = test_hosts.site()
    assert all(recap(out.stdout)[h]["changed"] > 0 for h in NAMES)
    ids = {image_id(test_hosts, h) for h in NAMES}
    assert len(ids) == 1 and ids.pop().startswith("sha256:")
    # The site's archive is loaded once, on k3-dk-0; k3-dk-1 gets the image from k3-dk-0 by
    # BitTorrent (docker save there, the archive checked against its SHA-256, docker load here).
    assert "changed: [k3-dk-0] => (item=%s (load))" % IMAGE in out.stdout
    assert "changed: [k3-dk-1] => (item=%s (load))" % IMAGE not in out.stdout
    assert "Download by BitTorrent" in out.stdout and "Load it on every target (docker load)" in out.stdout
    for host in NAMES:  # the archives go; the tracker and the seeder stopped
        assert test_hosts.shell(host, "ls -A /var/lib/kimi-k3/images") == ""
        assert test_hosts.shell(host, "systemctl list-units --all --no-legend 'k3-fanout*'") == ""
    for host in NAMES:
        assert test_hosts.shell(host, "systemctl is-active docker") == "active"
        assert test_hosts.shell(host, "dpkg-query -W -f '${Status}' docker.io") == "install ok installed"
        daemon = json.loads(test_hosts.shell(host, "cat /etc/docker/daemon.json"))
        # Both roles' keys: the nvidia runtime and the collection's log rotation (plus the test settings).
        assert daemon["runtimes"]["nvidia"]["path"] == "nvidia-container-runtime"
        assert daemon["log-opts"] == {"max-size": "100m", "max-file": "5"}
        info = test_hosts.shell(host, "docker info")
        assert " Logging Driver: json-file" in info and " Storage Driver: vfs" in info


def test_second_run_changes_nothing(test_hosts):
    out = test_hosts.site()
    assert [recap(out.stdout)[h]["changed"] for h in NAMES] == [0, 0], out.stdout[-3000:]


def test_another_build_under_the_same_tag_is_refused_naming_both_nodes(test_hosts):
    first = image_id(test_hosts, "k3-dk-0")
    test_hosts.shell("k3-dk-1", "docker rmi %s && docker load -i %s/images/engine-b.tar" % (IMAGE, REPO))
    other = image_id(test_hosts, "k3-dk-1")
    assert other != first
    out = test_hosts.site(check=False)
    assert out.returncode != 0
    assert "%s: the image differs between nodes (" % IMAGE in out.stdout
    assert "%s on k3-dk-0" % first in out.stdout and "%s on k3-dk-1" % other in out.stdout


@pytest.fixture(scope="module")
def stand_in_hub(tmp_path_factory):
    """A stand-in for Docker Hub on the controller's bridge address: the distribution's registry
    holding the engine image (build a), pushed by podman; its digest and access log."""
    folder = tmp_path_factory.mktemp("hub")
    binary = unpacked_program("docker-registry", "usr/bin/docker-registry", folder / "pkg")
    port = free_port()
    process = serve(binary, plain(folder, "%s:%d" % (CONTROLLER, port)), folder, "hub")
    try:
        maker = folder / "maker"
        loaded = podman(maker, "load", "-i", str(REPO / "images" / "engine-a.tar"))
        assert loaded.returncode == 0, loaded.stderr
        digest = push(maker, IMAGE, "%s:%d/%s" % (CONTROLLER, port, IMAGE), "--format", "v2s2")
        yield {
            "url": "http://%s:%d" % (CONTROLLER, port),
            "digest": digest,
            "log": folder / "hub.log",
        }
    finally:
        process.kill()
        process.wait()
        forget(folder / "maker")


def test_an_image_pinned_by_digest_comes_from_the_hub_once_through_the_site_mirror(test_hosts, stand_in_hub):
    pinned = "vllm/vllm-openai@%s" % stand_in_hub["digest"]
    args = ("-e", "k3_engine_image=%s" % pinned, "-e", "k3_container_mirror_remote=%s" % stand_in_hub["url"])
    started = {h: test_hosts.shell(h, "systemctl show -p ActiveEnterTimestamp --value docker") for h in NAMES}
    out = test_hosts.site(*args, check=False)
    assert out.returncode == 0, (
        out.stdout[-3000:],
        test_hosts.shell("k3-dk-0", "journalctl -u docker-registry --no-pager | tail -n 30"),
        test_hosts.shell("k3-dk-0", "journalctl -u docker --no-pager | tail -n 20"),
        test_hosts.shell("k3-dk-0", "docker info 2>&1 | grep -A2 -i mirror; curl -sS http://10.77.2.71:5050/v2/ 2>&1"),
        stand_in_hub["log"].read_text()[-2000:],
    )
    # The mirror runs on the plan's first container node; Docker took it by a reload, not a restart.
    assert test_hosts.shell("k3-dk-0", "systemctl is-active docker-registry") == "active"
    for host in NAMES:
        daemon = json.loads(test_hosts.shell(host, "cat /etc/docker/daemon.json"))
        assert daemon["registry-mirrors"] == ["http://10.77.2.71:5050"], daemon
        assert test_hosts.shell(host, "systemctl show -p ActiveEnterTimestamp --value docker") == started[host]
    # One node pulled it first, through the mirror; the other then from the mirror. Both hold it by
    # its digest (the name@sha256 the plan runs), the same image.
    assert "changed: [k3-dk-0] => (item=%s (pull))" % pinned in out.stdout, out.stdout[-3000:]
    assert "changed: [k3-dk-1] => (item=%s (from http://10.77.2.71:5050))" % pinned in out.stdout
    ids = {json.loads(test_hosts.shell(h, "docker image inspect %s" % pinned))[0]["Id"] for h in NAMES}
    assert len(ids) == 1, ids
    # The hub served every blob to the mirror's node only: k3-dk-1's pull never left the site. (The
    # hosts know the stand-in only as the mirror's remote: k3-dk-0's own pull went through it too.)
    clients = {client for client, _blob in blob_gets(stand_in_hub["log"].read_text())}
    assert clients == {"10.77.2.71"}, clients
    again = test_hosts.site(*args)
    assert [recap(again.stdout)[h]["changed"] for h in NAMES] == [0, 0], again.stdout[-3000:]
