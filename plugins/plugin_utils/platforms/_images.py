# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The same container image on every node of a deployment (plain Python, unit-tested)."""

from __future__ import annotations


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
