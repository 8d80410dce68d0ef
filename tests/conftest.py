"""Shared fixtures: the collection on sys.path, inventories loaded by real Ansible."""

from __future__ import annotations

import copy
import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / ".collections"))
sys.path.insert(0, str(ROOT / "tests"))
VENV_BIN = Path(sys.executable).parent
EXAMPLES = ROOT / "inventories" / "examples"
SPEC_DIR = ROOT.parent / "shared" / "spec"

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan import _planner as planner  # noqa: E402

# The progress lines (first: the others import it); the locked-down sandbox deployment, shared by the
# modules of tests/security (fixture ``deployed``); the collection's built artifact and its
# dependencies (fixture ``artifact``, tests/collection).
pytest_plugins = [
    "helpers.progress",
    "helpers.secured_sandbox",
    "helpers.cluster_sandbox",
    "helpers.collection_artifact",
]


def ansible_env():
    env = dict(os.environ)
    env["ANSIBLE_CONFIG"] = str(ROOT / "ansible.cfg")
    env["PATH"] = "%s:%s" % (VENV_BIN, env.get("PATH", ""))
    env.setdefault("ANSIBLE_LOCAL_TEMP", str(ROOT / ".cache" / "ansible-tmp"))
    return env


def inventory_list(path, export=False):
    """``ansible-inventory --list`` of ``path``, parsed (``export``: group variables kept on their groups)."""
    out = subprocess.run(
        [str(VENV_BIN / "ansible-inventory"), "-i", str(path), "--list"] + (["--export"] if export else []),
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=ansible_env(),
    ).stdout
    return json.loads(out)


@functools.cache
def inventory_input(path):
    """Groups and host variables exactly as Ansible resolves them for ``path``."""
    data = inventory_list(path)
    hostvars = data.get("_meta", {}).get("hostvars", {})
    groups = {}

    def walk(name):
        node = data.get(name, {})
        hosts = list(node.get("hosts", []))
        for child in node.get("children", []):
            for host in walk(child):
                if host not in hosts:
                    hosts.append(host)
        groups[name] = hosts
        return hosts

    walk("all")
    return {"groups": groups, "hostvars": hostvars}


@functools.cache
def unpacked_program(package, program, folder):
    """``program`` (e.g. usr/bin/promtool) of the Debian ``package`` the tests fetch (make test-data:
    .cache/debian-debs), unpacked into ``folder``: the real tool, run on the controller."""
    debs = sorted(DEBIAN_DEBS.glob("%s_*.deb" % package))
    assert debs, "no %s package in .cache/debian-debs: make test-data fetches it" % package
    subprocess.run(["dpkg-deb", "-x", str(debs[-1]), str(folder)], check=True)
    return Path(folder) / program


def example_plan(name):
    return planner.build_plan(inventory_input(str(EXAMPLES / name / "hosts.yml")))


# The sandbox inventories: their group_vars are committed, their hosts.yml is written by
# tools/sandbox.sh up from a hosts file (name, address, groups per line).
SANDBOX_HOSTS = {"sandbox": ROOT / "tools" / "sandbox-hosts.txt", "sandbox-ha": ROOT / "tools" / "sandbox-ha-hosts.txt"}


def write_sandbox_inventory(folder, name):
    """``inventories/<name>`` as ``tools/sandbox.sh up`` leaves it, in ``folder``: the committed
    group_vars (linked) and the hosts.yml it writes (hosts, addresses, groups in the hosts file's
    order, k3_sandbox_root), without the SSH settings: nothing here connects to a host."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    hosts, groups = [], {}
    for line in SANDBOX_HOSTS[name].read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        host, address, member_of = line.split()
        hosts.append((host, address))
        for group in member_of.split(","):
            groups.setdefault(group, []).append(host)
    text = ["---", "all:", "  vars:", '    k3_sandbox_root: "%s"' % ROOT, "  hosts:"]
    for host, address in hosts:
        text += ["    %s:" % host, "      ansible_host: %s" % address]
    text.append("  children:")
    for group, members in groups.items():
        text += ["    %s:" % group, "      hosts:"] + ["        %s:" % h for h in members]
    # Atomically, and a link made by another worker is as good: pytest-xdist workers share the folder.
    tmp = folder / (".hosts.yml.%d" % os.getpid())
    tmp.write_text("\n".join(text) + "\n")
    os.replace(tmp, folder / "hosts.yml")
    try:
        (folder / "group_vars").symlink_to(ROOT / "inventories" / name / "group_vars")
    except FileExistsError:
        pass
    return folder / "hosts.yml"


@functools.cache
def sandbox_inventory_input(name):
    """Groups and host variables of the sandbox inventory ``name``, as Ansible resolves them."""
    path = write_sandbox_inventory(ROOT / ".cache" / "tests" / "inventories" / name, name)
    data = copy.deepcopy(inventory_input(str(path)))
    # What Ansible's templating makes of the group_vars' paths under the checkout.
    for hostvars in data["hostvars"].values():
        for key, value in hostvars.items():
            if isinstance(value, str) and "{{ k3_sandbox_root }}" in value:
                hostvars[key] = value.replace("{{ k3_sandbox_root }}", str(ROOT))
    return data


def example_names():
    return sorted(p.name for p in EXAMPLES.iterdir() if (p / "hosts.yml").is_file())


def service(plan, host, name):
    for svc in plan["hosts"][host]["services"]:
        if svc["name"] == name:
            return svc
    raise KeyError("%s/%s not in plan" % (host, name))


@pytest.fixture
def plan_of():
    return example_plan


def pytest_collection_modifyitems(config, items):
    """The slow modules (a real server or an image build: the ``slow`` mark) first, the rest in their
    order. make test runs one worker per core and a file per worker at a time: started first, the
    long files run beside the short ones instead of alone at the end."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def skip_or_fail(reason):
    """Outside CI a missing venv skips a test; in CI (`make test` builds every venv) it is a failure."""
    if os.environ.get("CI"):
        pytest.fail("in CI: " + reason)
    pytest.skip(reason)


VLLM_PY = ROOT / ".venv" / "vllm" / "bin" / "python"


@functools.cache
def vllm_routes(key):
    """Every route of the pinned vLLM's API server, called without, with a wrong and with ``key``
    through the collection's guard (tests/contract/vllm_routes.py, in .venv/vllm)."""
    if not VLLM_PY.exists():
        skip_or_fail(".venv/vllm is missing: run `make venv-vllm` for the vLLM route contract")
    scratch = ROOT / ".cache" / "vllm-routes"
    scratch.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, TMPDIR=str(scratch), VLLM_CACHE_ROOT=str(scratch), HF_HOME=str(scratch))
    env["TORCHINDUCTOR_CACHE_DIR"] = str(scratch)
    guard = ROOT / "plugins" / "plugin_utils" / "data"
    out = subprocess.run(
        [str(VLLM_PY), str(ROOT / "tests" / "contract" / "vllm_routes.py"), str(guard), key],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
        env=env,
    )
    return json.loads(out.stdout)


DEBIAN_DEBS = ROOT / ".cache" / "debian-debs" / "pool"


@functools.cache
def nginx_program():
    """Debian's nginx (the package the front door installs on the hosts), unpacked from the test
    hosts' local repository (tools/fetch_debs.sh) into .cache/nginx, to run on the controller."""
    debs = sorted(DEBIAN_DEBS.glob("nginx_*.deb"))
    if not debs:
        skip_or_fail("no nginx package in .cache/debian-debs: run `tools/fetch_debs.sh` (make test does)")
    folder = ROOT / ".cache" / "nginx"
    program = folder / "usr" / "sbin" / "nginx"
    if not program.exists():
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(["dpkg-deb", "-x", str(debs[-1]), str(folder)], check=True)
    return program
