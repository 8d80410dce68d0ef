#!/usr/bin/env bash
# Install Debian packages on the controller for the tests: first from the package lists the machine
# has (no download of lists when they are good), then, if that fails (lists older than the archive,
# e.g. a package updated in bookworm-security), after apt-get update.
#   tools/apt_install.sh PACKAGE...
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
# One apt at a time: make test's set-up steps run side by side, and dpkg and the package lists
# each have one lock (apt-get fails at once when another apt holds it).
exec 9>/run/lock/k3-apt-install.lock
flock 9
apt-get install -y -qq --no-install-recommends "$@" && exit 0
echo "[apt] install of $* failed with the current package lists: apt-get update, then again" >&2
apt-get update -qq
apt-get install -y -qq --no-install-recommends "$@"
