# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Where each checkpoint comes from: the inventory's k3_model_weights_fetch against the plan.

Per checkpoint (``model``: the plan's model_path, ``draft``: its draft_model_path) the inventory
gives the revision and may give the hub, the repository and a Hub-compatible mirror (endpoint), or
a file store's address (url: HTTP(S) or S3) with the publisher's list as data (files); the
hub and repository default to what the platform's seed names (plugins/plugin_utils/data/
model_sources.yml). Every problem is found at once and named with the variable and the fix; nothing
here reads a host or a token. Pure functions: no I/O but the data file.
"""

from __future__ import annotations

import functools
import os
import posixpath
import re
from urllib.parse import urlsplit

import yaml

from ansible_collections.kimi_k3.serving.plugins.module_utils.checkpoint_files import staging_folder
from ansible_collections.kimi_k3.serving.plugins.plugin_utils._paths import DATA_DIR

SOURCES_FILE = os.path.join(DATA_DIR, "model_sources.yml")
VARIABLE = "k3_model_weights_fetch"
PATHS = {"model": "model_path", "draft": "draft_model_path"}
_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


class ModelSourcesError(ValueError):
    """k3_model_weights_fetch as the collection cannot use it."""


@functools.lru_cache(maxsize=1)
def catalog():
    """The data file: ``{repositories, hubs}``."""
    with open(SOURCES_FILE, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def _endpoint_problem(name, endpoint):
    parts = urlsplit(endpoint)
    if parts.scheme in ("http", "https") and parts.netloc and not parts.query and not parts.fragment:
        return None
    return "%s.%s.endpoint %r: give the mirror's address as http(s)://host[:port][/path]" % (VARIABLE, name, endpoint)


def _repository_problems(where, name, rules, repo, revision):
    problems = []
    if not repo:
        problems.append(
            "%s.repo: this profile's seed names no %s repository: set the repository (owner/name) to fetch"
            % (where, "draft" if name == "draft" else "model")
        )
    elif not _REPO.match(repo):
        problems.append("%s.repo %r: give the repository as owner/name" % (where, repo))
    if not revision:
        problems.append("%s.revision: pin the revision to fetch, %s" % (where, rules["revision_form"]))
    elif not re.match(rules["revision"], revision):
        problems.append("%s.revision %r: give %s" % (where, revision, rules["revision_form"]))
    return problems


def _store_problems(where, rules, given, revision):
    """A plain file store's (url, s3): its address and the publisher's list given as data."""
    problems = []
    url = given.get("url") or ""
    parts = urlsplit(url)
    schemes = rules["schemes"]
    if parts.scheme not in schemes or not parts.netloc or parts.query or parts.fragment:
        problems.append("%s.url %r: give the folder's address as %s" % (where, url, rules["url_form"]))
    if not given.get("files"):
        problems.append(
            "%s.files: this source gives no hashes of its own: name a file on the controller with the "
            "publisher's list (a release's checkpoints.json, or a JSON list of path, size and sha256)" % where
        )
    if revision and not re.match(rules["revision"], revision):
        problems.append("%s.revision %r: give %s" % (where, revision, rules["revision_form"]))
    return problems


def _one(name, given, seed, path):
    """The source of checkpoint ``name`` and its problems."""
    hubs = catalog()["hubs"]
    hub = given.get("hub") or seed.get("hub") or "huggingface"
    revision = str(given.get("revision") or "")
    where = "%s.%s" % (VARIABLE, name)
    if hub not in hubs:
        return None, ["%s.hub %r: one of %s" % (where, hub, ", ".join(sorted(hubs)))]
    rules = hubs[hub]
    if rules.get("schemes"):
        problems = _store_problems(where, rules, given, revision)
        source = {
            "hub": hub,
            "url": str(given.get("url") or "").rstrip("/"),
            "files": given.get("files"),
            "revision": revision,
        }
    else:
        repo = given.get("repo") or seed.get("repo")
        problems = _repository_problems(where, name, rules, repo, revision)
        source = {"hub": hub, "repo": repo, "revision": revision}
    if not (isinstance(path, str) and path.startswith("/")):
        problems.append(
            "%s: the plan's %s is %r, not a folder: set k3_%s to the folder the checkpoint goes to "
            "(e.g. /models/Kimi-K3) to fetch it once and bring it to every node"
            % (where, PATHS[name], path, PATHS[name]),
        )
    if given.get("endpoint"):
        problems.append(_endpoint_problem(name, given["endpoint"]))
        source["endpoint"] = given["endpoint"].rstrip("/")
    return {"name": name, "path": path, "source": source, "token": rules["token"]}, [p for p in problems if p]


def model_sources(plan, fetch):
    """The checkpoints to fetch: ``[{name, path, source: {hub, repo, revision[, endpoint]}, token}]``
    (a file store's source: ``{hub, url, files, revision[, endpoint]}``; ``files``: the controller's
    file with the publisher's list)
    (``token``: the name of the vault variable that holds the hub's token). ModelSourcesError
    lists every problem of ``fetch`` (k3_model_weights_fetch) at once."""
    fetch = fetch or {}
    if not isinstance(fetch, dict):
        raise ModelSourcesError("%s: a mapping of model and/or draft to their source" % VARIABLE)
    seeds = catalog()["repositories"].get(plan.get("platform") or "", {})
    parameters = plan.get("parameters") or {}
    out, problems = [], []
    for name in sorted(fetch):
        given = fetch[name] or {}
        if name not in PATHS:
            problems.append("%s.%s: only model and draft are fetched" % (VARIABLE, name))
            continue
        if not isinstance(given, dict):
            problems.append("%s.%s: a mapping of hub, repo, revision and endpoint" % (VARIABLE, name))
            continue
        entry, found = _one(name, given, seeds.get(name) or {}, parameters.get(PATHS[name]))
        problems.extend(found)
        if entry and not found:
            out.append(entry)
    if problems:
        raise ModelSourcesError("; ".join(problems))
    return out


def fanout(checkpoints, holding, hosts, seed=None):
    """Per checkpoint, the host that fetches or already holds it (``seed``) and the hosts it goes to.

    ``holding``: host to the list of its kimi_k3.serving.model_copy ``state=check`` results, one per
    checkpoint in order (``present``: the host holds it). The seed is ``seed`` when given (it must
    be one of ``hosts``), else the first host that holds the checkpoint, else the first host: the
    checkpoint is fetched once, by one host, and only when none has it.
    """
    hosts = list(hosts)
    if seed and seed not in hosts:
        raise ModelSourcesError(
            "model_weights_seed %r: not one of the hosts of this run (%s); name one of them or leave it empty"
            % (seed, ", ".join(hosts))
        )
    out = []
    for index, checkpoint in enumerate(checkpoints):
        present = [host for host in hosts if _present(holding.get(host), index)]
        chosen = seed or (present[0] if present else hosts[0])
        out.append(
            {
                "name": checkpoint["name"],
                "path": checkpoint["path"],
                "source": checkpoint["source"],
                "token": checkpoint["token"],
                "seed": chosen,
                "fetch": chosen not in present,
                "targets": [host for host in hosts if host != chosen and host not in present],
            }
        )
    return out


def _present(results, index):
    results = results or []
    return index < len(results) and bool(results[index].get("present"))


def transfer_watch(jobs, log_dir):
    """The fetches a seed started in the background (their registered results, each over the
    seed's listing of one checkpoint) -> what the role's progress loop reads:
    ``[{name, job, path: [staging folder], total, log}]``."""
    out = []
    for job in jobs or []:
        listed = job["item"]
        entry = listed["item"]
        out.append(
            {
                "name": entry["name"],
                "job": job["ansible_job_id"],
                "path": [staging_folder(entry["path"])],
                "total": listed["bytes"],
                "log": posixpath.join(log_dir, "%s-fetch.progress" % entry["name"]),
            }
        )
    return out


def model_published(checkpoints, listed):
    """Per checkpoint of ``checkpoints`` (model_fanout's), its name, folder, source and the publisher's
    files as its seed listed them (``listed``: the seeds' model_fetch results, each with its ``item``):
    what is kept with the release and compared with every node's folder."""
    files = {result["item"]["path"]: result["files"] for result in listed or [] if "files" in result}
    return [
        {"name": c["name"], "path": c["path"], "source": c["source"], "files": files[c["path"]]}
        for c in checkpoints or []
        if c["path"] in files
    ]
