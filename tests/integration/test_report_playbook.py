"""report.html through the real plan playbook on the sandbox inventory, and as Chromium renders it.

The inventory is inventories/sandbox as tools/sandbox.sh up leaves it (its committed group_vars,
the hosts.yml written from tools/sandbox-hosts.txt), in a temporary folder: nothing connects to a
host. The page is then opened in headless Chromium (Debian package chromium; make test installs
it): a screenshot that must show the picture (the colours of every kind of service and the red KV
path, decoded from the PNG with the standard library) and the rendered DOM, which must hold the
inline SVG naming every host.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time

import pytest
from conftest import ROOT, VENV_BIN, skip_or_fail, write_sandbox_inventory
from helpers.ansible_run import ansible_playbook
from helpers.pngread import read_png

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.report._dot import KV_COLOR, STYLES

WINDOW = (1280, 1000)


def playbook(inventory, dest, *args, env=None):
    plan = ROOT / "playbooks" / "plan.yml"
    return ansible_playbook(plan, "-e", "k3_plan_dir=%s" % dest, *args, inventory=inventory, env=env, timeout=600)


def localhost_changed(output):
    line = [x for x in output.splitlines() if x.startswith("localhost") and "changed=" in x][-1]
    return int(line.split("changed=")[1].split()[0])


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    if not shutil.which("dot"):
        skip_or_fail("Graphviz's dot is not installed (make test installs the Debian package graphviz)")
    inventory = write_sandbox_inventory(tmp_path_factory.mktemp("inventories") / "sandbox", "sandbox")
    dest = tmp_path_factory.mktemp("plan") / "plan"
    first = playbook(inventory, dest)
    return {"inventory": inventory, "dest": dest, "first": first}


def test_sandbox_plan_writes_report_and_a_rerun_changes_nothing(sandbox):
    dest = sandbox["dest"]
    assert localhost_changed(sandbox["first"].stdout) == 1
    report = dest / "report.html"
    page = report.read_text()
    plan = json.loads((dest / "plan.json").read_text())
    assert plan["profile"] == "sandbox-cpu"
    for host in plan["hosts"]:
        assert host in page
    assert page.count("<svg") == 1 and 'class="edge edge&#45;kv"' in page
    assert "the plan as a page, with a picture of the cluster: %s" % report in sandbox["first"].stdout
    before = report.stat().st_mtime_ns
    second = playbook(sandbox["inventory"], dest)
    assert localhost_changed(second.stdout) == 0, second.stdout
    assert report.stat().st_mtime_ns == before and report.read_text() == page
    # --check writes nothing: a removed report is reported as a change and stays removed.
    report.unlink()
    check = playbook(sandbox["inventory"], dest, "--check")
    assert localhost_changed(check.stdout) == 1 and not report.exists()
    playbook(sandbox["inventory"], dest)
    assert report.read_text() == page


def test_without_dot_the_report_has_a_note_and_the_play_warns_naming_the_package(tmp_path):
    inventory = write_sandbox_inventory(tmp_path / "sandbox", "sandbox")
    dest = tmp_path / "plan"
    # A search path with the venv's programs only: no dot.
    out = playbook(inventory, dest, env={"PATH": str(VENV_BIN)})
    assert localhost_changed(out.stdout) == 1
    text = re.sub(r"\s+", " ", out.stdout + out.stderr)
    assert (
        "[WARNING]: report.html was written without its topology picture: Graphviz's dot is not installed on the"
        " controller. Fix: install the package graphviz on the controller (Debian: apt-get install graphviz)"
    ) in text
    page = (dest / "report.html").read_text()
    assert 'id="no-picture"' in page and "<svg" not in page
    assert (dest / "plan.json").is_file()


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    skip_or_fail("Chromium is not installed (make test installs the Debian package chromium)")
    return None


def run_chromium(binary, profile, *args):
    """One headless Chromium run; on a timeout its whole process group goes (it starts helpers)."""
    cmd = [
        binary,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-extensions",
        "--hide-scrollbars",
        "--force-device-scale-factor=1",
        "--user-data-dir=%s" % profile,
        "--window-size=%d,%d" % WINDOW,
        *args,
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise AssertionError("chromium did not finish within 60 s: %s" % cmd) from None
    assert proc.returncode == 0, "chromium failed (%d): %s" % (proc.returncode, err[-2000:])
    return out


def test_report_renders_in_headless_chromium(sandbox, tmp_path):
    binary = chromium()
    report = sandbox["dest"] / "report.html"
    plan = json.loads((sandbox["dest"] / "plan.json").read_text())
    url = report.as_uri()
    start = time.monotonic()
    shot = tmp_path / "report.png"
    run_chromium(binary, tmp_path / "profile-shot", "--screenshot=%s" % shot, url)
    dom = run_chromium(binary, tmp_path / "profile-dom", "--dump-dom", url)
    elapsed = time.monotonic() - start

    # The rendered DOM: the inline SVG, every host named in it (dot's &#45; entities resolved).
    assert dom.count("<svg") == 1
    svg = dom[dom.index("<svg") : dom.index("</svg>")]
    for host in plan["hosts"]:
        assert ">%s<" % host in svg, host

    # The screenshot: the picture drawn, in the colours of every kind of service and the KV path.
    width, height, rows = read_png(shot.read_bytes())
    assert (width, height) == WINDOW
    sample = {row[i : i + 3] for row in rows[::4] for i in range(0, len(row), 3)}
    assert len(sample) > 50, "a near-blank screenshot: %d colours" % len(sample)
    # Chromium paints the fills exactly: count the pixels of each box colour and of the KV path.
    image = b"".join(rows)
    areas = {name: image.count(bytes.fromhex(fill[1:])) for name, (fill, _border) in STYLES.items()}
    areas["kv"] = image.count(bytes.fromhex(KV_COLOR[1:]))
    for name in ("front", "metaservice", "prefill", "decode", "engine"):
        assert areas[name] >= 1500, "too few %s pixels in the screenshot: %s" % (name, areas)
    assert areas["kv"] >= 150, "the KV path is not in the screenshot: %s" % areas
    assert elapsed < 20, "chromium took %.1f s" % elapsed
