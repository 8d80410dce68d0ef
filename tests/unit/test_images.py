"""The same image build on every node (plugins/plugin_utils/platforms/_images.py)."""

from __future__ import annotations

import pytest

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.platforms._images import (
    ImagesError,
    image_differences,
    image_fanout,
)

TAG = "vllm/vllm-openai:kimi-k3"


def info(image_id, *tags):
    """One entry of community.docker.docker_image_info's images (the fields the check reads)."""
    return {"Id": image_id, "RepoTags": list(tags)}


def test_the_same_build_everywhere_passes():
    assert image_differences({"n0": [info("sha256:aa", TAG)], "n1": [info("sha256:aa", TAG)]}) == []


def test_a_different_build_is_named_with_its_hosts():
    by_host = {
        "n0": [info("sha256:aa", TAG)],
        "n1": [info("sha256:bb", TAG)],
        "n2": [info("sha256:aa", TAG), info("sha256:cc", "vllm/vllm-router:nightly")],
    }
    assert image_differences(by_host) == [
        "vllm/vllm-openai:kimi-k3: the image differs between nodes (sha256:aa on n0, n2; sha256:bb on n1). "
        "Fix: pull or load the same build on every node, or pin the image by digest "
        "(k3_engine_image: name@sha256:...)."
    ]


def test_hosts_without_images_are_ignored():
    assert image_differences({"n0": [info("sha256:aa", TAG)], "router": []}) == []


ROUTER = "docker.io/vllm/vllm-router:v0.1.17"
PINNED = "nvcr.io/nvidia/k8s/dcgm-exporter@sha256:" + "a" * 64
HOSTS = ["n0", "n1", "n2"]


def test_an_image_no_node_holds_is_pulled_once_and_brought_to_the_others():
    needs = {"n0": [TAG], "n1": [TAG, ROUTER], "n2": [TAG]}
    assert image_fanout(needs, {}, HOSTS) == [
        {
            "image": TAG,
            "name": "vllm-vllm-openai-kimi-k3",
            "path": "/var/lib/kimi-k3/images/vllm-vllm-openai-kimi-k3",
            "seed": "n0",
            "how": "pull",
            "targets": ["n1", "n2"],
            "mirrored": [],
        },
        {
            "image": ROUTER,
            "name": "docker.io-vllm-vllm-router-v0.1.17",
            "path": "/var/lib/kimi-k3/images/docker.io-vllm-vllm-router-v0.1.17",
            "seed": "n1",
            "how": "pull",
            "targets": [],
            "mirrored": [],
        },
    ]


def test_a_node_that_holds_it_seeds_it_and_only_nodes_without_it_receive_it():
    needs = {host: [TAG] for host in HOSTS}
    (entry,) = image_fanout(needs, {"n1": [info("sha256:aa", TAG)]}, HOSTS)
    assert (entry["seed"], entry["how"], entry["targets"]) == ("n1", None, ["n0", "n2"])
    everywhere = {host: [info("sha256:aa", TAG)] for host in HOSTS}
    assert image_fanout(needs, everywhere, HOSTS)[0]["targets"] == []


def test_an_air_gapped_site_loads_its_archive_once_on_the_seed_it_names():
    needs = {host: [TAG] for host in HOSTS}
    (entry,) = image_fanout(needs, {}, HOSTS, seed="n2", archives={TAG: "/srv/images/engine.tar"})
    assert (entry["seed"], entry["how"], entry["targets"]) == ("n2", "load", ["n0", "n1"])


def test_an_image_pinned_by_digest_is_pulled_by_each_node_that_lacks_it():
    needs = {host: [PINNED] for host in HOSTS}
    held = {"n0": [{"Id": "sha256:ee", "RepoTags": [], "RepoDigests": [PINNED]}]}
    out = image_fanout(needs, held, HOSTS)
    assert [(e["seed"], e["how"], e["targets"]) for e in out] == [("n1", "pull", []), ("n2", "pull", [])]


def test_different_builds_and_a_seed_outside_the_run_are_refused_before_anything_moves():
    needs = {host: [TAG] for host in HOSTS}
    with pytest.raises(ImagesError) as found:
        image_fanout(needs, {"n0": [info("sha256:aa", TAG)], "n1": [info("sha256:bb", TAG)]}, HOSTS, seed="n9")
    message = str(found.value)
    assert "the image differs between nodes (sha256:aa on n0; sha256:bb on n1)" in message
    assert "container_runtime_seed 'n9': not one of the hosts of this run (n0, n1, n2)" in message


HUB_PINNED = "vllm/vllm-openai@sha256:" + "b" * 64


def test_with_the_mirror_a_hub_image_pinned_by_digest_is_pulled_once_then_from_the_mirror():
    needs = {host: [HUB_PINNED, PINNED] for host in HOSTS}
    held = {"n0": [{"Id": "sha256:ee", "RepoTags": [], "RepoDigests": [HUB_PINNED]}]}
    out = image_fanout(needs, held, HOSTS, mirror=True)
    # Docker Hub's: the first node that lacks it fills the mirror, the other pulls from it afterwards.
    assert [(e["image"], e["seed"], e["how"], e["targets"], e["mirrored"]) for e in out] == [
        (HUB_PINNED, "n1", "pull", [], ["n2"]),
        # Another registry's: Docker sends only Docker Hub's images to a mirror, so each node pulls it.
        (PINNED, "n0", "pull", [], []),
        (PINNED, "n1", "pull", [], []),
        (PINNED, "n2", "pull", [], []),
    ]
    # The seed named, when it lacks the image, fills the mirror; nothing to pull when every node holds it.
    assert image_fanout(needs, held, HOSTS, seed="n2", mirror=True)[0]["seed"] == "n2"
    everywhere = {host: held["n0"] for host in HOSTS}
    assert image_fanout({h: [HUB_PINNED] for h in HOSTS}, everywhere, HOSTS, mirror=True) == []
