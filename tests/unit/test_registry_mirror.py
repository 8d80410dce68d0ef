"""The site's Docker Hub mirror and how Docker takes a changed daemon.json (plugin_utils/platforms)."""

from __future__ import annotations

import pytest

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.platforms._docker_install import daemon_action
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.platforms._registry_mirror import (
    MirrorError,
    from_docker_hub,
    mirror_config,
    mirror_site,
)

PINNED = "vllm/vllm-openai@sha256:" + "a" * 64


def plan(*hosts, ports=None, image=PINNED):
    """A plan whose ``hosts`` run a service each, of ``image`` (``ports``: host -> its service's ports)."""
    ports = ports or {}
    out = {"hosts": {}}
    for i, (name, runtime) in enumerate(hosts):
        service = {"name": "engine-%s" % name, "runtime": runtime, "ports": ports.get(name, [8000])}
        if runtime == "docker":
            service["image"] = image
        out["hosts"][name] = {"ip": "10.0.0.%d" % (10 + i), "services": [service]}
    return out


@pytest.mark.parametrize(
    ("image", "hub"),
    [
        ("vllm/vllm-openai:kimi-k3", True),
        ("ubuntu", True),
        ("docker.io/vllm/vllm-router@sha256:" + "a" * 64, True),
        ("index.docker.io/library/nginx:1", True),
        ("quay.io/ascend/vllm-ascend:v0.11", False),
        ("nvcr.io/nvidia/k8s/dcgm-exporter:4", False),
        ("localhost/k3:1", False),
        ("registry.site:5000/k3/engine:1", False),
    ],
)
def test_which_images_docker_sends_to_a_mirror(image, hub):
    assert from_docker_hub(image) is hub


def test_the_mirror_runs_only_for_a_docker_hub_image_pinned_by_digest_on_two_nodes_or_more():
    assert mirror_site(plan(("p0", "docker"), ("d0", "docker"))) is not None
    # A tag goes by archive; another registry's pin cannot come through a Docker mirror; and without
    # a use, the registry would only fail to start where Docker Hub cannot be reached.
    assert mirror_site(plan(("p0", "docker"), ("d0", "docker"), image="vllm/vllm-openai:kimi-k3")) is None
    quay = "quay.io/ascend/vllm-ascend@sha256:" + "c" * 64
    assert mirror_site(plan(("p0", "docker"), ("d0", "docker"), image=quay)) is None


def test_the_mirror_runs_on_the_first_container_node_and_on_none_below_two():
    two = plan(("router", "native"), ("p0", "docker"), ("d0", "docker"))
    assert mirror_site(two) == {
        "host": "p0",
        "ip": "10.0.0.11",
        "port": 5050,
        "addr": "10.0.0.11:5050",
        "url": "http://10.0.0.11:5050",
    }
    assert mirror_site(two, "d0", 5051)["url"] == "http://10.0.0.12:5051"
    assert mirror_site(plan(("p0", "docker"), ("d0", "native"))) is None
    assert mirror_site(two, enabled=False) is None
    six = plan(("p0", "docker"), ("d0", "docker"))
    six["hosts"]["d0"]["ip"] = "fd00::7"
    assert mirror_site(six, "d0")["url"] == "http://[fd00::7]:5050"


def test_a_mirror_host_without_containers_or_a_taken_port_is_refused():
    cluster = plan(("router", "native"), ("p0", "docker"), ("d0", "docker"), ports={"p0": [8000, 5050]})
    with pytest.raises(MirrorError, match=r"container_runtime_mirror_host 'router': not a node of the plan that runs"):
        mirror_site(cluster, "router")
    with pytest.raises(MirrorError, match=r"container_runtime_mirror_port 5050: engine-p0 on p0 listens on it"):
        mirror_site(cluster)


def test_the_mirror_is_a_pull_through_cache_on_its_plan_address():
    site = mirror_site(plan(("p0", "docker"), ("d0", "docker")))
    config = mirror_config(site, "/srv/mirror")
    assert config["http"]["addr"] == "10.0.0.10:5050"
    assert config["proxy"] == {"remoteurl": "https://registry-1.docker.io"}
    assert config["storage"]["filesystem"] == {"rootdirectory": "/srv/mirror"}
    assert "debug" not in config["http"]
    account = mirror_config(site, credentials={"username": "site", "password": "s3cret"})["proxy"]
    assert (account["username"], account["password"]) == ("site", "s3cret")
    with pytest.raises(MirrorError, match="container_runtime_mirror_credentials: password missing"):
        mirror_config(site, credentials={"username": "site"})


@pytest.mark.parametrize(
    ("current", "wanted", "action"),
    [
        ({"log-driver": "json-file"}, {"log-driver": "json-file"}, None),
        ({"log-driver": "json-file"}, {"log-driver": "json-file", "registry-mirrors": ["http://p0:5050"]}, "reload"),
        ({}, {"runtimes": {"nvidia": {"path": "nvidia-container-runtime"}}, "default-runtime": "nvidia"}, "reload"),
        ({"registry-mirrors": ["http://a"]}, {"registry-mirrors": ["http://b"], "data-root": "/srv/docker"}, "restart"),
        ({"log-opts": {"max-size": "100m"}}, {"log-opts": {"max-size": "200m"}}, "restart"),
    ],
)
def test_a_running_docker_reloads_where_it_can_and_restarts_otherwise(current, wanted, action):
    assert daemon_action(current, wanted) == action
