# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The same container image on every node of a deployment (plain Python, unit-tested)."""

from __future__ import annotations

import re

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.platforms._registry_mirror import from_docker_hub


def image_differences(by_host):
    """``{host: [docker_image_info images]}`` -> one message per planned image whose ID differs between hosts.

    An image is named by the tag the plan uses (``RepoTags``); its identity is the image ID (the digest
    of its configuration), which is the same wherever the same build was pulled or loaded.
    """
    ids = {}
    for host in sorted(by_host):
        for image in by_host[host] or []:
            for tag in image.get("RepoTags") or []:
                ids.setdefault(tag, {}).setdefault(image.get("Id"), []).append(host)
    problems = []
    for tag, builds in sorted(ids.items()):
        if len(builds) > 1:
            listing = "; ".join(
                "%s on %s" % (image_id, ", ".join(hosts)) for image_id, hosts in sorted(builds.items(), key=str)
            )
            problems.append(
                "%s: the image differs between nodes (%s). Fix: pull or load the same build on every node, or "
                "pin the image by digest (k3_engine_image: name@sha256:...)." % (tag, listing)
            )
    return problems


class ImagesError(ValueError):
    """The images cannot be brought to the nodes as asked: every problem, in words."""


def _slug(image):
    """A folder name for ``image`` (its archive's folder on each node)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", image).strip("-.")


def _holds(images, ref):
    """Whether a host's docker_image_info ``images`` include ``ref`` (a tag, or a name@digest)."""
    return any(ref in (image.get("RepoTags") or []) + (image.get("RepoDigests") or []) for image in images or [])


def image_fanout(needs, info, hosts, seed=None, archives=None, root="/var/lib/kimi-k3/images", *, mirror=False):
    """Per planned image, the node that gets it once and the nodes it is brought to from there.

    ``needs``: host to the images its planned services run; ``info``: host to its
    community.docker.docker_image_info images; ``hosts``: the run's hosts in order; ``seed``: the node
    that gets every image (container_runtime_seed), else per image the first node that holds it, else
    the first that needs it; ``archives``: image to the archive (docker save) the seed loads instead
    of pulling (an air-gapped site). An image pinned by digest (name@sha256:...) is pulled (an
    archive keeps no repository digest; the pull checks it): with ``mirror`` (the site's Docker Hub
    mirror, mirror_site) and a Docker Hub image, by one node that lacks it first, which fills the
    mirror, then by the others (``mirrored``) from the mirror; otherwise by each node that lacks it.
    Returns ``[{image, name, path, seed, how, targets, mirrored}]`` (``how``: pull, load, or none
    when the seed holds it); ImagesError when the nodes hold different builds of an image, or
    ``seed`` is not a host.
    """
    hosts = list(hosts)
    archives = archives or {}
    problems = image_differences({host: info.get(host) or [] for host in hosts})
    if seed and seed not in hosts:
        problems.append(
            "container_runtime_seed %r: not one of the hosts of this run (%s); name one of them or leave it empty"
            % (seed, ", ".join(hosts))
        )
    if problems:
        raise ImagesError("; ".join(problems))
    images = []
    for host in hosts:
        images += [image for image in needs.get(host) or [] if image not in images]
    out = []
    for image in images:
        needing = [host for host in hosts if image in (needs.get(host) or [])]
        holding = [host for host in needing if _holds(info.get(host), image)]
        lacking = [host for host in needing if host not in holding]
        if "@sha256:" in image:
            out.extend(_pinned(image, lacking, seed, mirror and from_docker_hub(image)))
            continue
        chosen = seed or (holding[0] if holding else needing[0])
        how = None
        if not _holds(info.get(chosen), image):
            how = "load" if image in archives else "pull"
        out.append(
            {
                "image": image,
                "name": _slug(image),
                "path": "%s/%s" % (root.rstrip("/"), _slug(image)),
                "seed": chosen,
                "how": how,
                "targets": [host for host in lacking if host != chosen],
                "mirrored": [],
            }
        )
    return out


def _pinned(image, lacking, seed, mirrored):
    """The pulls of an image pinned by digest: through the mirror, the first alone, then the others."""
    if not lacking:
        return []
    entry = {"image": image, "name": _slug(image), "path": None, "how": "pull", "targets": [], "mirrored": []}
    if mirrored:
        first = seed if seed in lacking else lacking[0]
        return [dict(entry, seed=first, mirrored=[host for host in lacking if host != first])]
    return [dict(entry, seed=host) for host in lacking]
