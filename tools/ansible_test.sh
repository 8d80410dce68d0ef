#!/usr/bin/env bash
# ansible-test sanity on the collection as a site installs it, on this machine (no route to
# ansible-test's own file host).
#   tools/ansible_test.sh [ansible-test sanity options, e.g. --test pylint]
# The working tree (tracked or new files) is built into the artifact (galaxy.yml's build_ignore
# leaves the development files out) and installed at .cache/ansible-test/ansible_collections/
# kimi_k3/serving, the real path ansible-test wants. Its exceptions (tests/sanity/ignore-2.21.txt)
# name files of the artifact. Its virtual environments get pip from a script it downloads from
# ci-files.testing.ansible.com, which is not reachable here: tools/get_pip_offline.py goes where it
# keeps its downloaded copy, and gets pip from ensurepip and the packages ansible-test asks for
# from the package index this machine reaches.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO=$(pwd -P)
BIN=$REPO/.venv/ansible/bin
WORK=$REPO/.cache/ansible-test
TREE=$WORK/ansible_collections/kimi_k3/serving
# The pip version ansible-test bootstraps (its default for every Python, in this release).
PIP_VERSION=$("$BIN/python" -c '
import re, ansible_test._internal.python_requirements as r, inspect
print(re.search(r"pip=.([0-9.]+)", inspect.getsource(r.get_venv_packages)).group(1))')
mkdir -p ~/.ansible/test/cache
install -m 0644 tools/get_pip_offline.py ~/.ansible/test/cache/get_pip_"${PIP_VERSION//./_}".py
rm -rf "$WORK"
mkdir -p "$WORK/src" "$WORK/dist"
# The working tree's files (tracked or new, not ignored), so that an edit is tested before its commit.
git ls-files -z --cached --others --exclude-standard | tar --null -T - --ignore-failed-read -c 2>/dev/null | tar -x -C "$WORK/src"
"$BIN/ansible-galaxy" collection build --output-path "$WORK/dist" "$WORK/src" >/dev/null
ANSIBLE_CONFIG="" ANSIBLE_COLLECTIONS_PATH="$WORK" "$BIN/ansible-galaxy" collection install --offline --no-deps \
  -p "$WORK" "$WORK"/dist/kimi_k3-serving-*.tar.gz >/dev/null
rm -rf "$WORK/src" "$WORK/dist"
cd "$TREE"
# ansible-test lists a collection's files with git when it is a repository.
git init -q . && git add -A && git -c user.name=k3 -c user.email=k3@localhost commit -qm tree
PATH=$BIN:$PATH exec "$BIN/ansible-test" sanity --local --python 3.12 --color no "$@"
