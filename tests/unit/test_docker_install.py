"""docker_install_plan: how Docker is installed on each distribution, and what is refused."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._container import Filters

PLAN = Filters().filters()["docker_install_plan"]


# Facts as `setup: gather_subset=[min]` reports them on each distribution.
def facts(family, distribution, release, major):
    return {"os_family": family, "distribution": distribution, "distribution_release": release,
            "distribution_major_version": major}  # fmt: skip


BOOKWORM = facts("Debian", "Debian", "bookworm", "12")
NOBLE = facts("Debian", "Ubuntu", "noble", "24")
RHEL9 = facts("RedHat", "RedHat", "Plow", "9")
ROCKY8 = facts("RedHat", "Rocky", "Green Obsidian", "8")
OPENEULER = facts("RedHat", "openEuler", "LTS-SP4", "22")
ORACLE = facts("RedHat", "OracleLinux", "", "9")
SUSE = facts("Suse", "SLES", "5", "15")


@pytest.mark.parametrize(
    "facts,source,manager,packages",
    [
        (BOOKWORM, "distribution", "apt", ["docker.io", "python3-requests"]),
        (NOBLE, "distribution", "apt", ["docker.io", "python3-requests"]),
        (OPENEULER, "distribution", "dnf", ["docker", "python3-requests"]),
        (BOOKWORM, "docker", "apt", ["docker-ce", "docker-ce-cli", "containerd.io", "python3-requests"]),
        (RHEL9, "docker", "dnf", ["docker-ce", "docker-ce-cli", "containerd.io", "python3-requests"]),
        (ROCKY8, "docker", "dnf", ["docker-ce", "docker-ce-cli", "containerd.io", "python3-requests"]),
    ],
)
def test_the_manager_and_packages_of_each_distribution_and_source(facts, source, manager, packages):
    plan = PLAN(facts, source)
    assert (plan["manager"], plan["packages"]) == (manager, packages)
    assert (plan["repository"] is None) == (source == "distribution")


def test_docker_repository_on_ubuntu_is_a_signed_deb822_source_for_its_release():
    repo = PLAN(NOBLE, "docker")["repository"]
    assert repo == {
        "name": "k3-docker",
        "types": ["deb"],
        "uris": ["https://download.docker.com/linux/ubuntu"],
        "suites": ["noble"],
        "components": ["stable"],
        "signed_by": "https://download.docker.com/linux/ubuntu/gpg",
    }


@pytest.mark.parametrize(
    "facts,baseurl",
    [
        (RHEL9, "https://download.docker.com/linux/rhel/9/$basearch/stable"),
        (ROCKY8, "https://download.docker.com/linux/centos/8/$basearch/stable"),
    ],
)
def test_docker_repository_on_el_is_a_signed_yum_repository_for_its_major_version(facts, baseurl):
    repo = PLAN(facts, "docker")["repository"]
    assert repo["baseurl"] == baseurl and repo["gpgcheck"] is True
    assert repo["gpgkey"] == baseurl.split("/%s/" % facts["distribution_major_version"])[0] + "/gpg"


def test_a_site_mirror_replaces_docker_s_address_on_both_managers():
    apt = PLAN(BOOKWORM, "docker", repo_uri="https://mirror.example/docker", repo_key="/etc/keys/docker.asc")
    assert apt["repository"]["uris"] == ["https://mirror.example/docker"]
    assert apt["repository"]["signed_by"] == "/etc/keys/docker.asc"
    dnf = PLAN(ORACLE, "docker", repo_uri="https://mirror.example/docker")
    assert dnf["repository"]["baseurl"] == "https://mirror.example/docker/9/$basearch/stable"
    assert dnf["repository"]["gpgkey"] == "https://mirror.example/docker/gpg"


@pytest.mark.parametrize(
    "facts,source,words",
    [
        (RHEL9, "distribution", ["RedHat ships no Docker", "k3_container_source: docker"]),
        (OPENEULER, "docker", ["no repository for openEuler", "k3_container_source: distribution"]),
        (ORACLE, "docker", ["no Docker repository is known for OracleLinux", "k3_container_repo_uri"]),
        (SUSE, "distribution", ["SLES (os_family Suse) is not supported", "apt", "dnf"]),
        (BOOKWORM, "snap", ["k3_container_source is 'snap'", "distribution, docker"]),
        ({"os_family": "Debian"}, "distribution", ["no distribution", "gather_subset=[min]"]),
    ],
)
def test_what_cannot_work_is_refused_naming_the_fix(facts, source, words):
    with pytest.raises(AnsibleFilterError) as err:
        PLAN(facts, source)
    for word in words:
        assert word in str(err.value)
