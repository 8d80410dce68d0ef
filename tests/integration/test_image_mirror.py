"""The site's Docker Hub mirror: an image pinned by digest comes from the hub once, then from the site.

The real registry of the distribution's package (Debian's docker-registry, the one the mirror's
node installs, unpacked from .cache/debian-debs) runs twice on loopback: once as the stand-in for
Docker Hub (a plain registry holding an image podman made and pushed), once as the site's mirror
with the configuration the container_runtime role writes (the mirror_config filter's answer, its
remote pointed at the stand-in). Two nodes' image stores (podman, each its own storage) pull the
image by digest through the mirror, as Docker's registry-mirrors sends a node's pulls of Docker
Hub's images: the stand-in serves each blob once, the mirror serves both nodes, both hold the same
image. The mirror refuses a push, and a digest the hub does not have is refused naming it.
Docker itself cannot run here (no Docker engine on these machines): podman, which reads the same
mirror setting from registries.conf, is the client.
"""

from __future__ import annotations

import os
import tarfile
import urllib.error
import urllib.request

import pytest
from conftest import unpacked_program
from helpers.listening import free_port
from helpers.registry import blob_gets, forget, plain, podman, push, serve

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.platforms._registry_mirror import mirror_config

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="podman's own storage per node needs root")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mirror")
    binary = unpacked_program("docker-registry", "usr/bin/docker-registry", folder / "pkg")
    hub_port, mirror_port = free_port(), free_port()
    hub = plain(folder, "127.0.0.1:%d" % hub_port)
    mirror = mirror_config(
        {"host": "n0", "ip": "127.0.0.1", "port": mirror_port, "addr": "127.0.0.1:%d" % mirror_port},
        str(folder / "cache"),
        "http://127.0.0.1:%d" % hub_port,
    )
    mirror["log"]["accesslog"] = {"disabled": False}
    processes = [serve(binary, hub, folder, "hub")]
    try:
        processes.append(serve(binary, mirror, folder, "mirror"))
        yield stand_in(folder, hub_port, mirror_port)
    finally:  # the registries stop however the set-up or the tests end
        for process in processes:
            process.kill()
            process.wait()
        forget(*(folder / node for node in ("maker", "n1", "n2", "n3")))


def stand_in(folder, hub_port, mirror_port):
    """An image on the stand-in hub (a layer of a few files, imported and pushed by podman) and the
    nodes' setting: Docker Hub is the stand-in, its mirror first (Docker's registry-mirrors)."""
    layer = folder / "layer.tar"
    (folder / "rootfs").mkdir()
    (folder / "rootfs" / "weights.txt").write_text("kimi-k3 stand-in\n" * 1000)
    with tarfile.open(layer, "w") as tar:
        tar.add(folder / "rootfs", arcname=".")
    maker = folder / "maker"
    imported = podman(maker, "import", str(layer), "localhost/k3/tiny:1")
    assert imported.returncode == 0, imported.stderr
    digest = push(maker, "localhost/k3/tiny:1", "127.0.0.1:%d/k3/tiny:1" % hub_port)
    conf = folder / "registries.conf"
    conf.write_text(
        '[[registry]]\nprefix = "docker.io"\nlocation = "127.0.0.1:%d"\ninsecure = true\n'
        '[[registry.mirror]]\nlocation = "127.0.0.1:%d"\ninsecure = true\n' % (hub_port, mirror_port)
    )
    return {
        "folder": folder,
        "conf": conf,
        "digest": digest,
        "mirror_port": mirror_port,
        "hub_log": folder / "hub.log",
        "mirror_log": folder / "mirror.log",
    }


def test_an_image_pinned_by_digest_comes_from_the_hub_once_and_from_the_mirror_to_every_node(site):
    image = "docker.io/k3/tiny@%s" % site["digest"]
    ids, from_hub, from_mirror = [], [], []
    for node in ("n1", "n2"):
        hub_before = len(blob_gets(site["hub_log"].read_text()))
        mirror_before = len(blob_gets(site["mirror_log"].read_text()))
        pulled = podman(site["folder"] / node, "pull", image, conf=site["conf"])
        assert pulled.returncode == 0, pulled.stderr
        shown = podman(site["folder"] / node, "image", "inspect", "--format", "{{.Id}} {{.Digest}}", image)
        assert shown.returncode == 0, shown.stderr
        ids.append(shown.stdout.split())
        from_hub.append({blob for _client, blob in blob_gets(site["hub_log"].read_text())[hub_before:]})
        from_mirror.append({blob for _client, blob in blob_gets(site["mirror_log"].read_text())[mirror_before:]})
    # The same image on both nodes, under the digest the hub published.
    assert ids[0] == ids[1] and ids[0][1] == site["digest"], ids
    # The first node's pull brought the layer and the configuration from the hub (the registry fetches
    # a blob it lacks twice, once to keep and once to pass on); the second node's came from the site.
    assert len(from_hub[0]) == 2 and from_hub[1] == set(), from_hub
    assert from_mirror == [from_hub[0], from_hub[0]], (from_hub, from_mirror)


def test_the_mirror_refuses_a_push(site):
    request = urllib.request.Request(
        "http://127.0.0.1:%d/v2/k3/tiny/blobs/uploads/" % site["mirror_port"], data=b"", method="POST"
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=5)
    assert refused.value.code in (401, 405), refused.value.code


def test_a_digest_the_hub_does_not_have_is_refused_naming_it(site):
    wrong = "docker.io/k3/tiny@sha256:" + "0" * 64
    pulled = podman(site["folder"] / "n3", "pull", wrong, conf=site["conf"])
    assert pulled.returncode != 0
    assert "sha256:" + "0" * 64 in pulled.stderr, pulled.stderr
