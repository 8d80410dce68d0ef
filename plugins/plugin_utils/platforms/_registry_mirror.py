# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The site's Docker Hub mirror: where it runs and its configuration (plain Python, unit-tested).

Docker pulls an image pinned by digest (name@sha256:...) from a registry, which checks the digest;
an archive (docker save) keeps no repository digest, so such an image cannot go by the BitTorrent
fan-out. Docker's ``registry-mirrors`` sends Docker Hub's images to a mirror first (and to Docker Hub
when the mirror does not answer); the distribution registry (Debian's ``docker-registry``) in proxy
mode is that mirror: the first pull of a blob fetches it from Docker Hub and keeps it, the next ones
are served from the site. It refuses pushes (a pull-through cache is read only). It does not
start while it cannot reach its remote, so it runs only where a digest-pinned image of Docker Hub
is planned on two or more nodes.
"""

from __future__ import annotations

# The names Docker gives Docker Hub: its daemon sends these images to the site's mirror
# (``registry-mirrors``), and no other registry's.
DOCKER_HUB = ("docker.io", "index.docker.io", "registry-1.docker.io")
REMOTE = "https://registry-1.docker.io"


class MirrorError(ValueError):
    """The mirror cannot run as asked: the variable and the fix, in words."""


def from_docker_hub(image):
    """Whether ``image`` (a reference as the plan writes it) is Docker Hub's, which a mirror may serve."""
    first, slash, _rest = image.partition("/")
    if not slash:
        return True
    return first in DOCKER_HUB or not ("." in first or ":" in first or first == "localhost")


def mirror_site(plan, host="", port=5050, enabled=True):
    """The site's Docker Hub mirror, or None: ``{host, ip, port, addr, url}`` (``addr``: where it listens).

    A pull-through cache (the distribution registry) on one node of the deployment, which every node
    running containers names in Docker's ``registry-mirrors``: an image pinned by digest, which an
    archive cannot carry (it keeps no repository digest), comes from Docker Hub once, through it,
    and to the other nodes from there, each pull checked against the digest. ``host``: the node
    (container_runtime_mirror_host); empty: the first node of the plan that runs containers. None when
    ``enabled`` is false or no Docker Hub image pinned by digest is planned on two or more nodes
    (the registry will not start while it cannot reach Docker Hub, so a site that does not need it
    does not run it). Refused when ``host`` runs no containers or a planned service of it listens
    on ``port``.
    """
    hosts = (plan or {}).get("hosts") or {}
    docker = [name for name, data in hosts.items() if any(s.get("runtime") == "docker" for s in data["services"])]
    if not enabled or not _shared_pins(hosts):
        return None
    chosen = host or docker[0]
    if chosen not in docker:
        raise MirrorError(
            "container_runtime_mirror_host %r: not a node of the plan that runs containers (%s); name one of them "
            "or leave it empty" % (chosen, ", ".join(docker))
        )
    taken = [s["name"] for s in hosts[chosen]["services"] if int(port) in (s.get("ports") or [])]
    if taken:
        raise MirrorError(
            "container_runtime_mirror_port %s: %s on %s listens on it; choose another port"
            % (port, ", ".join(taken), chosen)
        )
    ip = hosts[chosen]["ip"]
    addr = "%s:%d" % ("[%s]" % ip if ":" in ip else ip, int(port))
    return {"host": chosen, "ip": ip, "port": int(port), "addr": addr, "url": "http://" + addr}


def _shared_pins(hosts):
    """The Docker Hub images pinned by digest that two or more nodes' planned containers run."""
    nodes = {}
    for name, data in hosts.items():
        for service in data["services"]:
            image = service.get("image") or ""
            if service.get("runtime") == "docker" and "@sha256:" in image and from_docker_hub(image):
                nodes.setdefault(image, set()).add(name)
    return sorted(image for image, names in nodes.items() if len(names) > 1)


def mirror_config(mirror, storage="/var/lib/docker-registry", remote=REMOTE, credentials=None):
    """The registry's configuration (config.yml as a dict) for ``mirror`` (mirror_site's answer).

    It listens on the node's plan address only; ``credentials`` (``{username, password}``, a Docker
    Hub account, from the vault) lift Docker Hub's anonymous pull limit. No debug listener.
    """
    proxy = {"remoteurl": remote}
    if credentials:
        missing = [k for k in ("username", "password") if not credentials.get(k)]
        if missing:
            raise MirrorError(
                "container_runtime_mirror_credentials: %s missing; give both username and password, or neither"
                % " and ".join(missing)
            )
        proxy.update(username=credentials["username"], password=credentials["password"])
    return {
        "version": 0.1,
        "log": {"level": "info", "fields": {"service": "k3-image-mirror"}},
        "storage": {
            "filesystem": {"rootdirectory": storage},
            "cache": {"blobdescriptor": "inmemory"},
            "delete": {"enabled": True},
        },
        "http": {"addr": mirror["addr"], "headers": {"X-Content-Type-Options": ["nosniff"]}},
        "proxy": proxy,
        "health": {"storagedriver": {"enabled": True, "interval": "10s", "threshold": 3}},
    }
