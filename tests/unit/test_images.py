"""The same image build on every node (plugins/plugin_utils/platforms/_images.py)."""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.platforms._images import image_differences

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
