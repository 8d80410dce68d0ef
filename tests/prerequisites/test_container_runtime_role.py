"""The container_runtime role in site.yml's prerequisites stage, on real test hosts over SSH.

Real: the hosts, apt installing Debian's docker.io (from the local copy of Debian's packages that
tools/fetch_debs.sh makes at install time: the hosts' distribution, as on an air-gapped site), the
Docker engine under systemd, community.docker loading, saving and inspecting images, and the image
brought from the node that loaded it to the other by BitTorrent (aria2, mktorrent, opentracker).
TEST DOUBLES: the NVIDIA packages the nvidia role meets on these GB200-class hosts (r580
installed), and the engine image, a tiny docker-save archive under the planned tag
vllm/vllm-openai:kimi-k3, in two builds (tests/prerequisites/build_repo.py).
"""

from __future__ import annotations

import json
import os

import pytest
from doubles import REPO, TestHosts, recap

HOSTS = TestHosts(
    "hosts-docker.txt",
    "inventory-docker",
    {"k3-dk-0": "nvidia-driver-580-open", "k3-dk-1": "nvidia-driver-580-open"},
    debian=True,
)
NAMES = ("k3-dk-0", "k3-dk-1")
IMAGE = "vllm/vllm-openai:kimi-k3"

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
