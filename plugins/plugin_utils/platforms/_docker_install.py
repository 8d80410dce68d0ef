# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""How Docker is installed on a host: the package manager, the repository and the packages.

``docker_install_plan(facts, source, repo_uri='', repo_key='')`` takes the host's distribution
facts (``ansible_facts`` after ``setup: gather_subset=[min]``: ``os_family``, ``distribution``,
``distribution_release``, ``distribution_major_version``) and the site's choice of source:

- ``distribution``: the distribution's own package (``docker.io`` on Debian and Ubuntu,
  ``docker`` on openEuler). RHEL-family distributions other than openEuler ship no Docker (only
  podman): refused, naming ``k3_container_source: docker`` as the fix.
- ``docker``: Docker's own repository (``docker-ce``, ``docker-ce-cli``, ``containerd.io``):
  a deb822 source on Debian and Ubuntu, a yum repository on EL 8/9 (``rhel`` for RHEL, ``centos``
  for Rocky, Alma, CentOS). Docker publishes nothing for openEuler: refused, naming the fix.

The answer is data for the role's tasks: ``manager`` (apt or dnf), ``repository`` (None, or the
fields of ansible.builtin.deb822_repository / ansible.builtin.yum_repository), ``packages`` (the
Docker packages and the Python library the docker modules use). Anything else raises
``DockerInstallError`` with the message the role shows.
"""

from __future__ import annotations

DOCKER_CE = ["docker-ce", "docker-ce-cli", "containerd.io"]
APT_FAMILIES = {"Debian"}
DNF_FAMILIES = {"RedHat"}
# Docker's repository folder per RHEL-family distribution (download.docker.com/linux/<folder>).
DOCKER_EL_FOLDERS = {"RedHat": "rhel", "Rocky": "centos", "AlmaLinux": "centos", "CentOS": "centos"}
SOURCES = ("distribution", "docker")


class DockerInstallError(ValueError):
    """A host and source that cannot get Docker; the message names the variable and the fix."""


def _fact(facts, name):
    value = facts.get(name)
    if not value:
        raise DockerInstallError("the host's facts have no %s (gather them with setup: gather_subset=[min])" % name)
    return str(value)


def docker_install_plan(facts, source, repo_uri="", repo_key=""):
    """The manager, repository and packages that install Docker on a host with ``facts`` from ``source``."""
    if source not in SOURCES:
        raise DockerInstallError(
            "k3_container_source is %r: use one of %s" % (source, ", ".join(SOURCES)),
        )
    family = _fact(facts, "os_family")
    distribution = _fact(facts, "distribution")
    if family in APT_FAMILIES:
        if source == "distribution":
            return {"manager": "apt", "repository": None, "packages": ["docker.io", "python3-requests"]}
        uri = repo_uri or "https://download.docker.com/linux/%s" % distribution.lower()
        return {
            "manager": "apt",
            "repository": {
                "name": "k3-docker",
                "types": ["deb"],
                "uris": [uri],
                "suites": [_fact(facts, "distribution_release")],
                "components": ["stable"],
                "signed_by": repo_key or uri + "/gpg",
            },
            "packages": DOCKER_CE + ["python3-requests"],
        }
    if family in DNF_FAMILIES:
        if distribution == "openEuler":
            if source == "docker":
                raise DockerInstallError(
                    "Docker publishes no repository for openEuler: set k3_container_source: distribution "
                    "(openEuler's own docker package)"
                )
            return {"manager": "dnf", "repository": None, "packages": ["docker", "python3-requests"]}
        if source == "distribution":
            raise DockerInstallError(
                "%s ships no Docker package (only podman): set k3_container_source: docker "
                "(Docker's repository, docker-ce)" % distribution
            )
        folder = DOCKER_EL_FOLDERS.get(distribution)
        if folder is None and not repo_uri:
            raise DockerInstallError(
                "no Docker repository is known for %s: set k3_container_repo_uri to one that serves it "
                "(e.g. https://download.docker.com/linux/centos)" % distribution
            )
        uri = repo_uri or "https://download.docker.com/linux/%s" % folder
        return {
            "manager": "dnf",
            "repository": {
                "name": "k3-docker",
                "description": "Docker CE (kimi_k3.serving)",
                "baseurl": "%s/%s/$basearch/stable" % (uri, _fact(facts, "distribution_major_version")),
                "gpgcheck": True,
                "gpgkey": repo_key or uri + "/gpg",
            },
            "packages": DOCKER_CE + ["python3-requests"],
        }
    raise DockerInstallError(
        "%s (os_family %s) is not supported: Docker is installed with apt (Debian, Ubuntu) or dnf "
        "(EL 8/9, openEuler)" % (distribution, family)
    )


# The daemon.json keys a running Docker applies on SIGHUP (systemctl reload docker) without stopping
# its containers (moby's daemon/reload.go); any other change needs a restart, which stops them unless
# live-restore is on.
RELOADABLE = (
    "debug",
    "default-runtime",
    "insecure-registries",
    "labels",
    "live-restore",
    "max-concurrent-downloads",
    "max-concurrent-uploads",
    "max-download-attempts",
    "registry-mirrors",
    "runtimes",
    "shutdown-timeout",
)


def daemon_action(current, wanted):
    """How a running Docker takes ``wanted`` (daemon.json as a dict) over ``current``.

    ``None`` when nothing changes, ``reload`` when only keys Docker reloads on SIGHUP change (its
    containers keep running: adding the site's mirror to a serving cluster stops nothing),
    ``restart`` otherwise.
    """
    current, wanted = dict(current or {}), dict(wanted or {})
    changed = {key for key in set(current) | set(wanted) if current.get(key) != wanted.get(key)}
    if not changed:
        return None
    return "reload" if changed <= set(RELOADABLE) else "restart"
