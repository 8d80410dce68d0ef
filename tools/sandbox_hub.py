#!/usr/bin/env python3
"""A Hugging Face repository made from a checkpoint folder, for the sandbox's hub (olah) to serve.

    tools/sandbox_hub.py SOURCE_FOLDER MIRRORS_ROOT OWNER/NAME

Writes MIRRORS_ROOT/models/OWNER/NAME as the Hub keeps a model: a Git repository whose weight
files (*.safetensors, and any file over 1 MiB) are Git LFS pointers, their content under
.git/lfs/objects/ by SHA-256, on branch main. The commit's author and date are fixed, so the
same folder always gives the same commit. Prints the commit and writes it to
MIRRORS_ROOT/models/OWNER/NAME.revision (the sandbox inventory pins it). A second run with the same
folder changes nothing.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

LFS_MIN_BYTES = 1024 * 1024
FIXED = {
    "GIT_AUTHOR_NAME": "kimi_k3.serving sandbox",
    "GIT_AUTHOR_EMAIL": "sandbox@kimi-k3.invalid",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_NAME": "kimi_k3.serving sandbox",
    "GIT_COMMITTER_EMAIL": "sandbox@kimi-k3.invalid",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
}


def is_lfs(path):
    return path.suffix == ".safetensors" or path.stat().st_size > LFS_MIN_BYTES


def pointer(sha, size):
    return "version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %d\n" % (sha, size)


def source_digest(source):
    digest = hashlib.sha256()
    for path in sorted(p for p in source.rglob("*") if p.is_file() and not p.name.startswith(".")):
        digest.update(str(path.relative_to(source)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def git(repo, *args):
    env = {**os.environ, **FIXED}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, env=env, capture_output=True, text=True).stdout


def build(source, repo):
    if repo.exists():
        shutil.rmtree(repo)
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    objects = repo / ".git" / "lfs" / "objects"
    for path in sorted(p for p in source.rglob("*") if p.is_file() and not p.name.startswith(".")):
        target = repo / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        if is_lfs(path):
            content = path.read_bytes()
            sha = hashlib.sha256(content).hexdigest()
            stored = objects / sha[:2] / sha[2:4] / sha
            stored.parent.mkdir(parents=True, exist_ok=True)
            stored.write_bytes(content)
            target.write_text(pointer(sha, len(content)))
        else:
            shutil.copyfile(path, target)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "Sandbox checkpoint")
    return git(repo, "rev-parse", "HEAD").strip()


def main(argv):
    if len(argv) != 4 or "/" not in argv[3]:
        sys.exit(__doc__)
    source, root, name = Path(argv[1]), Path(argv[2]), argv[3]
    repo = root / "models" / name
    stamp = repo.with_name(repo.name + ".source")
    revision_file = repo.with_name(repo.name + ".revision")
    want = source_digest(source)
    if stamp.is_file() and stamp.read_text() == want and revision_file.is_file():
        print(revision_file.read_text().strip())
        return
    revision = build(source, repo)
    revision_file.write_text(revision + "\n")
    stamp.write_text(want)
    print(revision)


if __name__ == "__main__":
    main(sys.argv)
