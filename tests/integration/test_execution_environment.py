"""The execution environment, built for real and used the way AWX uses it.

tools/ee.sh makes a Debian trixie base image (debootstrap, `podman import`: no registry is
reachable here), then `ansible-builder build` (execution-environment.yml, v3) builds the image with
podman: ansible-core, ansible-runner, this collection from its built tarball, the collections it
calls, and what meta/execution-environment.yml declares (matplotlib, Graphviz, ssh, rsync). Then the
plan job template is laid out as AWX lays out a job (tools/awx.py job) and the real ansible-runner
runs it inside the image (--process-isolation with podman), as an AWX execution node does: it
plans exactly what the checkout plans. Needs root, podman and runc (make test installs them).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
from conftest import EXAMPLES, ROOT, VENV_BIN, ansible_env, skip_or_fail
from helpers.awx_jobs import awx, checkout_plan, runner_home_env

# A real server or an image build: make test runs it, make test-fast leaves it out.
pytestmark = pytest.mark.slow

VERSION = next(
    line.split()[1] for line in (ROOT / "galaxy.yml").read_text().splitlines() if line.startswith("version:")
)
IMAGE = "localhost/kimi-k3-ee:%s" % VERSION


@pytest.fixture(scope="module")
def image():
    if os.geteuid() != 0 or not shutil.which("podman") or not shutil.which("debootstrap"):
        skip_or_fail("the execution environment is built as root with podman and debootstrap")
    proc = subprocess.run(
        [str(ROOT / "tools" / "ee.sh"), "build"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=ansible_env(),
        check=False,
        timeout=1800,
    )
    assert proc.returncode == 0, proc.stderr[-6000:]
    assert proc.stdout.strip().splitlines()[-1] == IMAGE
    return IMAGE


def in_image(image, *argv):
    proc = subprocess.run(
        ["podman", "run", "--rm", "--network=host", image, *argv], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc.stdout


def test_the_image_holds_ansible_the_runner_the_collections_and_the_tools(image):
    assert "core 2.21.5" in in_image(image, "ansible", "--version")
    assert in_image(image, "ansible-runner", "--version").strip() == "2.4.3"
    listed = in_image(image, "ansible-galaxy", "collection", "list", "--format", "json")
    found = {name for path in json.loads(listed).values() for name in path}
    assert {"kimi_k3.serving", "community.docker", "community.general", "ansible.posix"} <= found
    assert "dot - graphviz" in in_image(image, "sh", "-c", "dot -V 2>&1")
    in_image(image, "python3", "-c", "import matplotlib, jinja2, yaml")
    in_image(image, "sh", "-c", "command -v ssh && command -v rsync")
    # The same collection as the checkout's (built from it).
    manifest = json.loads(
        in_image(image, "cat", "/usr/share/ansible/collections/ansible_collections/kimi_k3/serving/MANIFEST.json")
    )
    assert manifest["collection_info"]["version"] == VERSION


def test_the_plan_job_runs_inside_the_image_and_plans_what_the_checkout_plans(image, tmp_path):
    inventory = EXAMPLES / "nvidia-pd-nixl" / "hosts.yml"
    pdd = tmp_path / "job"
    # The job's folder is /runner in the container: the plan goes to a folder of the job's.
    awx("job", "plan", pdd, "-i", inventory, "-e", json.dumps({"k3_plan_dir": "/runner/plan"}))
    proc = subprocess.run(
        [
            str(VENV_BIN / "ansible-runner"),
            "run",
            str(pdd),
            "-p",
            "playbooks/plan.yml",
            "--process-isolation",
            "--process-isolation-executable",
            "podman",
            "--container-image",
            image,
            # Rootful podman here: the image's user 1000 would not read the job's root-owned files
            # (AWX's rootless podman maps them to it); no CNI bridge on this machine.
            "--container-option=--user=0",
            "--container-option=--network=host",
        ],
        capture_output=True,
        text=True,
        check=False,
        env=runner_home_env(tmp_path / "home"),
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    in_ee = json.loads((pdd / "plan" / "plan.json").read_text())
    assert in_ee["hosts"] and in_ee == checkout_plan(inventory, tmp_path / "checkout-plan")
    # The picture was drawn inside the image (its Graphviz), not left as a note.
    assert "<svg" in (pdd / "plan" / "report.html").read_text()
