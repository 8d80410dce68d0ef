"""Test hosts for the prerequisites roles: tools/sandbox.sh hosts with packaged TEST DOUBLES.

Each test module names its hosts file, its inventory folder and which double packages each host
starts with; the repository of doubles (build_repo.py) is mounted read-only into every host.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

from conftest import ROOT, VENV_BIN, ansible_env

HERE = ROOT / "tests" / "prerequisites"
REPO = ROOT / ".cache" / "test-repo"


BRIDGE_IP = "10.77.0.1"
PROXY_PORT = 3142
PROXY_PID = Path("/run/k3-sandbox-tests/apt-cacher-ng.pid")


def debian_mirror():
    """The Debian mirror this machine's apt uses (the proxy's only backend)."""
    for source in sorted(Path("/etc/apt/sources.list.d").glob("*.sources")) + [Path("/etc/apt/sources.list")]:
        if source.is_file():
            match = re.search(r"(?:URIs:|deb)\s+(http://\S+?/debian)/?\s", source.read_text())
            if match:
                return match.group(1) + "/"
    return "http://deb.debian.org/debian/"


def start_apt_proxy():
    """apt-cacher-ng on the bridge address, forwarding only to Debian's mirror: the test hosts have no
    route out, so the distribution's packages (e.g. docker.io) reach them through it, as through a site's
    mirror. Cached under /var/cache/apt-cacher-ng for later runs."""
    if not Path("/usr/sbin/apt-cacher-ng").exists():
        env = {"DEBIAN_FRONTEND": "noninteractive"}
        run("apt-get", "update", "-q", env=env)
        run("apt-get", "install", "-y", "-q", "--no-install-recommends", "apt-cacher-ng", env=env)
    Path("/etc/apt-cacher-ng/backends_debian").write_text(debian_mirror() + "\n")
    stop_apt_proxy()
    PROXY_PID.parent.mkdir(parents=True, exist_ok=True)
    run(
        "/usr/sbin/apt-cacher-ng",
        "-c",
        "/etc/apt-cacher-ng",
        "BindAddress=%s" % BRIDGE_IP,
        "Port=%d" % PROXY_PORT,
        "PidFile=%s" % PROXY_PID,
        "ForeGround=0",
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection((BRIDGE_IP, PROXY_PORT), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    raise AssertionError("apt-cacher-ng does not answer on %s:%d" % (BRIDGE_IP, PROXY_PORT))


def stop_apt_proxy():
    try:
        os.kill(int(PROXY_PID.read_text().strip()), signal.SIGTERM)
    except (OSError, ValueError):
        pass
    PROXY_PID.unlink(missing_ok=True)


def run(*cmd, check=True, env=None, timeout=1800):
    proc = subprocess.run(
        [str(c) for c in cmd],
        cwd=ROOT,
        env={**ansible_env(), **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if check and proc.returncode:
        raise AssertionError(
            "%s failed (%d):\n%s\n%s" % (cmd, proc.returncode, proc.stdout[-6000:], proc.stderr[-3000:])
        )
    return proc


def recap(output):
    """PLAY RECAP counters per host."""
    return {
        m.group(1): {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
        for m in re.finditer(r"^(\S+)\s+:\s+(ok=.*)$", output, re.M)
    }


class TestHosts:
    """A set of test hosts with an inventory folder of their own."""

    __test__ = False

    def __init__(self, hosts_file, inventory, packages, apt_proxy=False):
        self.inventory = HERE / inventory
        self.packages = packages
        self.apt_proxy = apt_proxy
        self.env = {
            "K3SB_HOSTS_FILE": str(HERE / hosts_file),
            "K3SB_EXTRA_BINDS": str(REPO),
            "K3SB_INVENTORY": str(self.inventory / "hosts.yml"),
        }

    def up(self):
        run(VENV_BIN / "python", HERE / "build_repo.py", REPO)
        run("tools/sandbox.sh", "down", env=self.env)
        run("tools/sandbox.sh", "up", env=self.env)
        if self.apt_proxy:
            start_apt_proxy()
            self.adhoc(
                "all",
                "ansible.builtin.copy",
                "dest=/etc/apt/apt.conf.d/01k3-test-proxy content='Acquire::http::Proxy \"http://%s:%d\";\n'"
                % (BRIDGE_IP, PROXY_PORT),
            )
        else:
            # The hosts have no route out: Debian's own mirror would make every apt-get update fail.
            # Only the local repository of doubles is reachable, as the roles configure it.
            self.adhoc("all", "ansible.builtin.shell", "rm -f /etc/apt/sources.list /etc/apt/sources.list.d/*")
        for host, glob in self.packages.items():
            [deb] = REPO.glob("pool/%s_*.deb" % glob)
            self.adhoc(host, "ansible.builtin.apt", "deb=%s" % deb)

    def down(self):
        if self.apt_proxy:
            stop_apt_proxy()
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
        return run(
            VENV_BIN / "ansible-playbook",
            "site.yml",
            "-i",
            self.inventory,
            "--tags",
            "prerequisites",
            *args,
            check=check,
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
