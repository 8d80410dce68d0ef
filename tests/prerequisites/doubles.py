"""Test hosts for the prerequisites roles: tools/sandbox.sh hosts with packaged TEST DOUBLES.

Each test module names its hosts file, its inventory folder and which double packages each host
starts with; the repository of doubles (build_repo.py) is mounted read-only into every host.
"""

from __future__ import annotations

import json

from conftest import ROOT, VENV_BIN
from helpers.ansible_run import ansible_playbook
from helpers.sandbox_run import recap, run

__all__ = ["REPO", "ROOT", "TestHosts", "recap", "run"]

HERE = ROOT / "tests" / "prerequisites"
REPO = ROOT / ".cache" / "test-repo"


# Debian packages the hosts install from "the distribution" (tools/fetch_debs.sh, an install step).
DEBIAN_DEBS = ROOT / ".cache" / "debian-debs"


class TestHosts:
    """A set of test hosts with an inventory folder of their own."""

    __test__ = False

    def __init__(self, hosts_file, inventory, packages, debian=False):
        self.inventory = HERE / inventory
        self.packages = packages
        self.debian = debian
        self.env = {
            "K3SB_HOSTS_FILE": str(HERE / hosts_file),
            "K3SB_EXTRA_BINDS": " ".join(str(p) for p in ([REPO, DEBIAN_DEBS] if debian else [REPO])),
            "K3SB_INVENTORY": str(self.inventory / "hosts.yml"),
        }
        # A plan folder of its own: the other suites run beside this one (make test).
        self.plan_dir = ROOT / ".cache" / "test-plans" / inventory

    def up(self):
        run(VENV_BIN / "python", HERE / "build_repo.py", REPO)
        run("tools/sandbox.sh", "down", env=self.env)
        run("tools/sandbox.sh", "up", env=self.env)
        # The hosts have no route out: Debian's own mirror would make every apt-get update fail.
        # Only the local repositories are reachable: the doubles, as the roles configure them, and
        # (debian=True) the Debian packages fetched at install time, as the hosts' distribution.
        self.adhoc("all", "ansible.builtin.shell", "rm -f /etc/apt/sources.list /etc/apt/sources.list.d/*")
        if self.debian:
            if not (DEBIAN_DEBS / "InRelease").is_file():
                raise AssertionError("%s is missing: run tools/fetch_debs.sh (make test does)" % DEBIAN_DEBS)
            self.adhoc(
                "all",
                "ansible.builtin.copy",
                "dest=/etc/apt/sources.list content='deb [signed-by=%s/keyring.gpg] file:%s ./\n'"
                % (DEBIAN_DEBS, DEBIAN_DEBS),
            )
        for host, glob in self.packages.items():
            [deb] = REPO.glob("pool/%s_*.deb" % glob)
            self.adhoc(host, "ansible.builtin.apt", "deb=%s" % deb)

    def down(self):
        run("tools/sandbox.sh", "down", env=self.env, check=False)

    def session(self):
        """Up for a test module, then removed (a module-scoped fixture yields from this)."""
        self.up()
        try:
            yield self
        finally:
            self.down()

    def adhoc(self, pattern, module, args, check=True):
        return run(VENV_BIN / "ansible", pattern, "-i", self.inventory, "-m", module, "-a", args, check=check)

    def site(self, *args, check=True):
        """site.yml's prerequisites stage (the plan runs first, as always)."""
        plan = ("-e", "k3_plan_dir=%s" % self.plan_dir)
        return ansible_playbook(
            "site.yml", "--tags", "prerequisites", *plan, *args, inventory=self.inventory, check=check
        )

    def shell(self, host, command):
        """stdout of a shell command on a test host (ad-hoc, JSON callback)."""
        out = run(
            VENV_BIN / "ansible",
            host,
            "-i",
            self.inventory,
            "-m",
            "ansible.builtin.shell",
            "-a",
            command,
            env={"ANSIBLE_LOAD_CALLBACK_PLUGINS": "1", "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json"},
        )
        return json.loads(out.stdout)["plays"][0]["tasks"][0]["hosts"][host]["stdout"]
