#!/usr/bin/env python3
"""Tar an installed collection (a folder with MANIFEST.json and FILES.json) as Galaxy serves one.

  tools/collection_tarball.py SOURCE OUT.tar.gz

The collections bundled in the `ansible` package from PyPI are installed collections, but their
FILES.json still lists files the wheel leaves out (CI folders such as .azure-pipelines); an
`ansible-galaxy collection install` of such a tarball fails on the first one missing. The tarball
holds every file of SOURCE (no __pycache__) and a FILES.json that lists exactly those, each with
its recorded checksum: what remains is verified as before.
"""

from __future__ import annotations

import io
import json
import sys
import tarfile
from pathlib import Path


def main(source, out):
    source = Path(source)
    files = json.loads((source / "FILES.json").read_text())
    files["files"] = [entry for entry in files["files"] if (source / entry["name"]).exists()]
    with tarfile.open(out, "w:gz") as tar:
        for item in sorted(source.iterdir()):
            if item.name == "FILES.json":
                data = json.dumps(files, indent=4).encode()
                info = tarfile.TarInfo("FILES.json")
                info.size, info.mode = len(data), 0o644
                tar.addfile(info, io.BytesIO(data))
            else:
                tar.add(item, arcname=item.name, filter=lambda m: None if "__pycache__" in m.name else m)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
