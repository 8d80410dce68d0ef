"""tools/unpack_debs.sh: the folders the sandbox's running hosts mount are kept, not made again.

A host's bind mount holds on to the folder, not its path: the second `make sandbox` once removed and
remade the iperf3 folder, and its hosts were left an empty, deleted one. Real packages built here
with dpkg-deb, unpacked by the real script.
"""

from __future__ import annotations

import os
import subprocess

from conftest import ROOT

SCRIPT = ROOT / "tools" / "unpack_debs.sh"


def build(pool, name, version, content):
    root = pool.parent / ("src-%s-%s" % (name, version))
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN" / "control").write_text(
        "Package: %s\nVersion: %s\nArchitecture: all\nMaintainer: test <t@example.invalid>\nDescription: t\n"
        % (name, version)
    )
    (root / "usr" / "bin").mkdir(parents=True)
    (root / "usr" / "bin" / name).write_text(content)
    for old in pool.glob("%s_*.deb" % name):
        old.unlink()
    subprocess.run(
        [
            "dpkg-deb",
            "--root-owner-group",
            "-Zgzip",
            "--build",
            str(root),
            str(pool / ("%s_%s_all.deb" % (name, version))),
        ],
        check=True,
        capture_output=True,
    )


def unpack(folder, pool, *names):
    return subprocess.run([str(SCRIPT), str(folder), str(pool), *names], check=True, capture_output=True, text=True)


def test_the_same_packages_again_change_nothing_and_a_new_one_refills_the_same_folder(tmp_path):
    pool = tmp_path / "pool"
    pool.mkdir()
    build(pool, "tool", "1", "one\n")
    build(pool, "libtool0", "1", "lib\n")
    folder = tmp_path / "unpacked"
    first = unpack(folder, pool, "tool", "libtool0")
    assert "tool libtool0 unpacked" in first.stdout
    inode = os.stat(folder).st_ino
    (folder / "usr" / "bin" / "tool").chmod(0o755)  # a mark that a second unpack would undo
    again = unpack(folder, pool, "tool", "libtool0")
    assert again.stdout == "" and os.stat(folder).st_ino == inode
    assert (folder / "usr" / "bin" / "tool").stat().st_mode & 0o777 == 0o755
    # A new package: the same folder (the hosts' mount still sees it), its old files gone.
    build(pool, "tool", "2", "two\n")
    (folder / "stale").write_text("left from before\n")
    unpack(folder, pool, "tool", "libtool0")
    assert os.stat(folder).st_ino == inode
    assert (folder / "usr" / "bin" / "tool").read_text() == "two\n" and not (folder / "stale").exists()
    assert (folder / "usr" / "bin" / "libtool0").read_text() == "lib\n"


def test_a_package_missing_from_the_pool_is_named(tmp_path):
    pool = tmp_path / "pool"
    pool.mkdir()
    done = subprocess.run(
        [str(SCRIPT), str(tmp_path / "x"), str(pool), "iperf3"], check=False, capture_output=True, text=True
    )
    assert done.returncode == 1 and done.stderr == "unpack_debs: no iperf3 package in %s\n" % pool
