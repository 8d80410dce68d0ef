# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The releases a module keeps on a host (module_utils/releases.py), as M(kimi_k3.serving.service_units) takes them."""

from __future__ import annotations


class ModuleDocFragment:
    """kimi_k3.serving.releases."""

    DOCUMENTATION = r"""
options:
  release:
    description:
      - The release (the plan) these files come from, C(id) and C(by) (who applied it). When given, every
        service whose files change has them copied, as they now are, under O(releases_dir) (folders 0700,
        copies 0600, keys never kept - a line with a key keeps only its name), so that
        M(kimi_k3.serving.service_releases) can bring them back; the files a service had before releases
        were kept are adopted once as release C(unrecorded).
    type: dict
    suboptions:
      id:
        description: The release's id.
        type: str
        required: true
      by:
        description: Who applied it.
        type: str
        default: ""
  releases_dir:
    description: Where the releases are kept on the host.
    type: path
    default: /var/lib/kimi-k3/releases
  releases_keep:
    description: How many releases are kept per service (the current one always is).
    type: int
    default: 3
  pending:
    description:
      - Units (each with its service) to look at for a restart still owed, returned in
        RV(pending_services) - a unit whose main process started before the newest change of its
        service's files (an upgrade that stopped halfway, a release restored but not restarted yet).
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The planned service.
        type: str
        required: true
      unit:
        description: Its systemd unit (without C(.service)).
        type: str
        required: true
      phase:
        description: Its start phase, as in O(start) (not used here, so that the same list serves both).
        type: str
        choices: [node0, followers]
"""
