#!/usr/bin/env python3
"""TEST DOUBLE of ModelScope's model hub: one repository at one revision, from a folder.

No ModelScope server can run here (the hub is a hosted service with no self-hosted build), so
this stand-in answers the routes the real ``modelscope`` SDK calls to list and download a model
(``modelscope.snapshot_download``), in the shape of a recorded real answer: the file listing's
envelope and every field of its entries are those of the response recorded in
tests/unit/fixtures/modelscope/ (its source is in SOURCES.md there); only the values (names, sizes,
hashes, the revision) are this folder's. It is labelled a double wherever it appears.

Routes (what the SDK asks, traced from the SDK itself):
- ``GET /api/v1/models/<owner>/<name>/repo/files?Revision=R&Recursive=True``: the listing.
- ``GET /api/v1/models/<owner>/<name>/repo?Revision=R&FilePath=P``: a file (HTTP ranges honoured,
  so that a cut transfer resumes).
The revision is answered by its commit, its tag, or ``master`` (the hub's default branch); any
other repository or revision answers 404; with ``--token``, a request without
``Authorization: Bearer <token>`` answers 401, as the hub does for a token it refuses.

    modelscope_hub.py --folder DIR --repo OWNER/NAME --revision R --listen IP:PORT [--token T]
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import os
import re
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

RECORDED = Path(__file__).resolve().parents[1] / "unit" / "fixtures" / "modelscope"
LISTING = RECORDED / "repo-files_README-md_modelscope-tests.json"
ROUTE = re.compile(r"^/api/v1/models/(?P<repo>[^/]+/[^/]+)/(?P<what>repo/files|repo)$")
CHUNK = 1024 * 1024
# Files kept in Git LFS by the hub (the recorded entry is a small Git file: IsLFS false).
LFS_SUFFIXES = (".safetensors", ".bin", ".pt", ".gguf")


def sha256(path):
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def listing(folder, revision):
    """The recorded listing with one entry per file of ``folder`` (the recorded entry as template)."""
    recorded = json.loads(LISTING.read_text())
    template = recorded["Data"]["Files"][0]
    files = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        entry = copy.deepcopy(template)
        relative = path.relative_to(folder).as_posix()
        entry.update(
            Name=path.name,
            Path=relative,
            Revision=revision,
            Sha256=sha256(path),
            Size=path.stat().st_size,
            IsLFS=relative.endswith(LFS_SUFFIXES),
        )
        files.append(entry)
    recorded["Data"]["Files"] = files
    return recorded


class Hub(BaseHTTPRequestHandler):
    """The two read routes of one repository (settings on the server object)."""

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        """Quiet: the tests read answers, not the log."""

    def _answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _refuse(self, status, message):
        # The envelope of the recorded answer, with the HTTP status as its code.
        self._answer(status, {"Code": status, "Message": message, "RequestId": str(uuid.uuid4()), "Success": False})

    def do_GET(self):  # noqa: N802 - the base class's name
        server = self.server
        url = urlsplit(self.path)
        query = {key: values[0] for key, values in parse_qs(url.query).items()}
        match = ROUTE.match(unquote(url.path))
        if server.token and self.headers.get("Authorization") != "Bearer %s" % server.token:
            self._refuse(401, "AccessToken is invalid or expired")
        elif not match or match["repo"] != server.repo:
            self._refuse(404, "model not found")
        elif query.get("Revision", "master") not in (server.revision, server.tag, "master"):
            self._refuse(404, "revision not found")
        elif match["what"] == "repo/files":
            self._answer(200, server.listing)
        else:
            self._file(query.get("FilePath", ""))

    def _file(self, relative):
        path = (self.server.folder / relative).resolve()
        if not path.is_file() or self.server.folder not in path.parents:
            self._refuse(404, "file not found")
            return
        size = path.stat().st_size
        start, status = 0, 200
        ranged = re.match(r"bytes=(\d+)-", self.headers.get("Range", ""))
        if ranged and int(ranged[1]) < size:
            start, status = int(ranged[1]), 206
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(size - start))
        self.send_header("Accept-Ranges", "bytes")
        if status == 206:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, size - 1, size))
        self.end_headers()
        with path.open("rb") as handle:
            handle.seek(start)
            for block in iter(lambda: handle.read(CHUNK), b""):
                self.wfile.write(block)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", type=Path, required=True)
    parser.add_argument("--repo", required=True)
    parser.add_argument("--revision", required=True, help="the commit the listing names")
    parser.add_argument("--tag", default=None, help="a tag that also names the revision")
    parser.add_argument("--listen", required=True, help="IP:PORT")
    parser.add_argument("--token", default=os.environ.get("MODELSCOPE_DOUBLE_TOKEN"))
    args = parser.parse_args()
    host, port = args.listen.rsplit(":", 1)
    server = ThreadingHTTPServer((host, int(port)), Hub)
    server.folder = args.folder.resolve()
    server.repo, server.revision, server.tag, server.token = args.repo, args.revision, args.tag, args.token
    server.listing = listing(server.folder, args.revision)
    server.serve_forever()


if __name__ == "__main__":
    main()
