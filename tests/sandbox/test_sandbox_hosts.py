"""The local test cluster of tools/sandbox.sh: real hosts (network namespace + systemd + sshd) on a bridge.

Needs root (network namespaces, overlay mounts, systemd-nspawn). One `up` for the whole module and one
`down` at its end; the first `up` on a machine also builds the cached base rootfs (about a minute).
"""

from __future__ import annotations

import configparser
import json
import os
import re
import subprocess
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SANDBOX = ROOT / "tools" / "sandbox.sh"
HOSTS_FILE = ROOT / "tools" / "sandbox-hosts.txt"
INVENTORY = ROOT / "inventories" / "sandbox" / "hosts.yml"
ANSIBLE = ROOT / ".venv" / "ansible" / "bin" / "ansible"
RUN_DIR = Path("/run/k3-sandbox")
SHARED = ROOT / ".cache" / "sandbox" / "shared"
MODELS = ROOT / ".cache" / "sandbox" / "models"
# The hosts' distribution mirror: tools/fetch_debs.sh's local repository (make test builds it first).
DEBIAN_REPO = ROOT / ".cache" / "debian-debs"
READ_ONLY_PATHS = [
    ROOT / ".venv" / "vllm",
    ROOT / ".venv" / "services",
    ROOT / ".venv" / "torch",  # the one torch the vllm and bench venvs link to (tools/venvs.sh)
    Path("/root/.pyenv/versions/3.11.7"),
    Path("/root/.pyenv/versions/3.12.1"),
    MODELS,
    DEBIAN_REPO,
]

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="needs root: the sandbox makes network namespaces, mounts and systemd-nspawn machines"
)


def sandbox_hosts() -> dict[str, str]:
    """Host name -> address, as tools/sandbox-hosts.txt lists them."""
    hosts = {}
    for line in HOSTS_FILE.read_text().splitlines():
        fields = line.split()
        if fields and not fields[0].startswith("#"):
            hosts[fields[0]] = fields[1]
    return hosts


HOSTS = sandbox_hosts()


def sandbox(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(SANDBOX), *args], capture_output=True, text=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL
    )


def nspawn_pids() -> dict[str, str]:
    return {p.stem: p.read_text().strip() for p in RUN_DIR.glob("*.pid")}


def adhoc(module: str, args: str = "", pattern: str = "all") -> dict[str, dict]:
    """Runs one Ansible module on `pattern` through the generated inventory; the result of each host."""
    env = dict(os.environ)
    env.update(
        ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
        ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
        ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
        ANSIBLE_LOCAL_TEMP=str(ROOT / ".cache" / "ansible-tmp"),
        ANSIBLE_DEPRECATION_WARNINGS="0",
    )
    cmd = [str(ANSIBLE), pattern, "-i", str(INVENTORY), "-m", module]
    if args:
        cmd += ["-a", args]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, cwd=ROOT, env=env, timeout=180, check=False, stdin=subprocess.DEVNULL
    )
    try:
        data = json.loads(proc.stdout)
    except json.JSONDecodeError:
        pytest.fail("ansible %s: no JSON output (rc %d)\n%s\n%s" % (module, proc.returncode, proc.stdout, proc.stderr))
    return data["plays"][0]["tasks"][0]["hosts"]


def ok_results(results: dict[str, dict]) -> dict[str, dict]:
    """Every sandbox host answered, none failed or was unreachable."""
    assert sorted(results) == sorted(HOSTS)
    bad = {h: r.get("msg") or r.get("stderr") for h, r in results.items() if r.get("failed") or r.get("unreachable")}
    assert not bad, bad
    return results


@pytest.fixture(scope="module")
def cluster():
    if not ANSIBLE.exists():
        pytest.skip("the controller venv is missing: run `make venv`")
    up = sandbox("up")
    try:
        assert up.returncode == 0, "sandbox.sh up failed:\n%s\n%s" % (up.stdout, up.stderr)
        yield up
    finally:
        down = sandbox("down", timeout=300)
        assert down.returncode == 0, "sandbox.sh down failed:\n%s\n%s" % (down.stdout, down.stderr)


def test_inventory_lists_hosts_groups_and_connection(cluster):
    text = INVENTORY.read_text()
    for name, ip in HOSTS.items():
        assert re.search(r"^    %s:\n      ansible_host: %s$" % (re.escape(name), re.escape(ip)), text, re.M)
    assert "ansible_user: root" in text
    assert 'ansible_ssh_private_key_file: "%s"' % (ROOT / ".cache" / "sandbox" / "id_ed25519") in text
    assert "ansible_python_interpreter: /usr/bin/python3" in text
    for group in ("router", "metaservice", "engine", "prefill", "decode"):
        assert re.search(r"^    %s:\n      hosts:$" % group, text, re.M)


KNOWN_HOSTS = ROOT / ".cache" / "sandbox" / "known_hosts"


def test_inventory_checks_host_keys_against_the_hosts_own_keys(cluster):
    text = INVENTORY.read_text()
    assert 'ansible_ssh_common_args: "-o UserKnownHostsFile=%s"' % KNOWN_HOSTS in text
    assert "StrictHostKeyChecking=no" not in text and "/dev/null" not in text
    lines = KNOWN_HOSTS.read_text().splitlines()
    for name, ip in HOSTS.items():
        root = Path("/var/lib/k3-sandbox/hosts") / name / "root" / "etc" / "ssh"
        for pub in sorted(root.glob("ssh_host_*_key.pub")):
            assert "%s,%s %s" % (ip, name, " ".join(pub.read_text().split()[:2])) in lines, (name, pub)
    assert len(lines) == 2 * len(HOSTS)


def test_a_production_inventory_keeps_host_key_checking_on(cluster, tmp_path):
    """The repository's ansible.cfg with an inventory that does not name the sandbox's known_hosts: the same
    host, user and login key, but its host key is unknown, so Ansible refuses to connect."""
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    dump = subprocess.run(
        [str(ANSIBLE) + "-config", "dump", "--format", "json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
        check=True,
    )
    settings = {s["name"]: s["value"] for s in json.loads(dump.stdout) if "name" in s}
    assert settings["HOST_KEY_CHECKING"] is True
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "ansible.cfg")
    ssh_args = cfg.get("ssh_connection", "ssh_args")
    assert "StrictHostKeyChecking" not in ssh_args and "UserKnownHostsFile" not in ssh_args, ssh_args
    host, ip = next(iter(HOSTS.items()))
    inventory = tmp_path / "prod.yml"
    inventory.write_text(
        "all:\n  hosts:\n    %s:\n      ansible_host: %s\n      ansible_user: root\n"
        "      ansible_ssh_private_key_file: %s\n" % (host, ip, ROOT / ".cache" / "sandbox" / "id_ed25519")
    )
    env.update(ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json")
    proc = subprocess.run(
        [str(ANSIBLE), host, "-i", str(inventory), "-m", "ansible.builtin.ping"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    result = json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"][host]
    assert result.get("unreachable"), result
    assert "Host key verification failed" in result["msg"], result["msg"]


def test_every_host_answers_ansible_ping(cluster):
    for name, result in ok_results(adhoc("ansible.builtin.ping")).items():
        assert result["ping"] == "pong", name


def test_systemd_runs_in_every_host(cluster):
    results = adhoc("ansible.builtin.command", "systemctl is-system-running")
    assert sorted(results) == sorted(HOSTS)
    for name, result in results.items():
        assert result.get("stdout") in ("running", "degraded"), (name, result)
    for name, result in ok_results(adhoc("ansible.builtin.systemd_service", "name=ssh")).items():
        assert result["status"]["ActiveState"] == "active", name


def test_hosts_reach_each_other_but_have_no_default_route(cluster):
    names = " ".join(HOSTS)
    script = (
        'set -e; test -z "$(ip route show default)"; ip -4 route show; '
        "if ip route get 192.0.2.1 >/dev/null 2>&1; then echo routed-out; exit 1; fi; "  # a lookup: nothing is sent
        'for h in %s; do timeout 5 bash -c "exec 3<>/dev/tcp/$h/22"; echo reached $h; done; hostname' % names
    )
    for name, result in ok_results(adhoc("ansible.builtin.shell", script)).items():
        lines = result["stdout"].splitlines()
        assert lines[0].split()[:3] == ["10.77.0.0/24", "dev", "eth0"], (name, lines)
        assert [ln for ln in lines if ln.startswith("10.")] == [lines[0]], (name, lines)
        assert ["reached %s" % h for h in HOSTS] == [ln for ln in lines if ln.startswith("reached ")], name
        assert lines[-1] == name


def test_shared_storage_is_visible_read_only(cluster):
    paths = [p for p in READ_ONLY_PATHS if p.is_dir()]  # a folder missing on the controller is not mounted
    assert MODELS in paths
    script = "; ".join(
        "echo == %s; findmnt -n -o OPTIONS --target %s | tr , '\\n' | grep -qx ro && echo mounted-ro; "
        "touch %s/.k3-write-probe 2>/dev/null && echo writable || echo refused; ls -A %s" % (p, p, p, p)
        for p in paths
    )
    for name, result in ok_results(adhoc("ansible.builtin.shell", script)).items():
        sections = result["stdout"].split("== ")[1:]
        assert len(sections) == len(paths), (name, result["stdout"])
        for path, section in zip(paths, sections, strict=True):
            lines = section.splitlines()
            assert lines[0] == str(path), (name, lines[0])
            assert lines[1:3] == ["mounted-ro", "refused"], (name, path, lines[1:3])
            assert sorted(lines[3:]) == sorted(p.name for p in path.iterdir()), (name, path)


def test_the_local_debian_mirror_is_the_only_apt_source_and_apt_reads_it(cluster):
    if not (DEBIAN_REPO / "InRelease").is_file():
        pytest.skip("no local Debian mirror yet (tools/fetch_debs.sh; make test builds it)")
    script = (
        "cat /etc/apt/sources.list; ls /etc/apt/sources.list.d; apt-get update -q >/dev/null 2>&1 && echo updated; "
        "apt-cache policy prometheus | sed -n 's/^ *Candidate: //p'"
    )
    [pool] = [p.name for p in DEBIAN_REPO.glob("pool/prometheus_*.deb")]
    candidate = pool.split("_")[1].replace("%3a", ":")
    for name, result in ok_results(adhoc("ansible.builtin.shell", script)).items():
        lines = result["stdout"].splitlines()
        assert lines == [
            "deb [signed-by=%s/keyring.gpg] file:%s ./" % (DEBIAN_REPO, DEBIAN_REPO),
            "updated",
            candidate,
        ], (
            name,
            lines,
        )


def test_venv_interpreters_work_inside(cluster):
    venvs = [p for p in READ_ONLY_PATHS[:2] if (p / "bin" / "python").exists()]
    if not venvs:
        pytest.skip("no venv under .venv/ to check (tools/venvs.sh vllm builds them)")
    script = "; ".join("%s/bin/python -c 'import sys; print(sys.prefix)'" % v for v in venvs)
    for name, result in ok_results(adhoc("ansible.builtin.shell", script)).items():
        assert result["stdout"].splitlines() == [str(v) for v in venvs], name


def test_srv_k3_shared_is_one_folder_for_all_hosts(cluster):
    token = uuid.uuid4().hex
    writer, reader = list(HOSTS)[0], list(HOSTS)[-1]
    probe = "probe-%s" % token
    try:
        wrote = adhoc("ansible.builtin.copy", "dest=/srv/k3-shared/%s content=%s" % (probe, token), writer)
        assert not wrote[writer].get("failed"), wrote
        read = adhoc("ansible.builtin.command", "cat /srv/k3-shared/%s" % probe, reader)
        assert read[reader].get("stdout") == token, read
        assert (SHARED / probe).read_text() == token
    finally:
        (SHARED / probe).unlink(missing_ok=True)


def test_second_up_is_a_fast_no_op(cluster):
    before = nspawn_pids()
    start = time.monotonic()
    again = sandbox("up", timeout=120)
    elapsed = time.monotonic() - start
    assert again.returncode == 0, again.stdout + again.stderr
    assert elapsed < 15, "second up took %.1fs" % elapsed
    assert "booting" not in again.stdout, again.stdout
    assert nspawn_pids() == before


def test_down_leaves_nothing(cluster):
    down = sandbox("down", timeout=300)
    assert down.returncode == 0, down.stdout + down.stderr
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    assert not {line.split()[0] for line in netns.splitlines() if line.strip()} & set(HOSTS), netns
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=True).stdout
    assert not re.search(r"^\d+: (k3sb0|k3sbv\d+)[@:]", links, re.M), links
    procs = subprocess.run(["ps", "-eo", "stat=,args="], capture_output=True, text=True, check=True).stdout
    assert not [ln for ln in procs.splitlines() if "/var/lib/k3-sandbox/" in ln and not ln.startswith("Z")], procs
    assert not INVENTORY.exists()
    assert not RUN_DIR.exists()
