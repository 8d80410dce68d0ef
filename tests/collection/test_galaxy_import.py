"""galaxy-importer, what Galaxy and Automation Hub run on every upload, on the built artifact:
it imports, ansible-doc documents every module, filter and role it lists, no name is listed
twice, and its ansible-lint finds nothing. Its ansible-test step needs a container runtime of
its own and is left out (RUN_ANSIBLE_TEST = False); tools/ansible_test.sh runs ansible-test
sanity on the installed artifact instead (make sanity). Galaxy installs no dependency before its
lint; here the declared ones are there, so that its lint reaches every playbook."""

from __future__ import annotations

import collections
import json
import os
import subprocess

import pytest
from conftest import ROOT
from helpers.collection_artifact import install, only

GALAXY_BIN = ROOT / ".venv" / "galaxy" / "bin"
# galaxy-importer runs for a minute or more: make test starts it first (tests/conftest.py).
pytestmark = pytest.mark.slow
# The content Galaxy shows with its documentation (action plugins and module_utils are the
# controller and host sides of the modules of the same names, documented there).
DOCUMENTED = ("module", "filter", "role")


@pytest.fixture(scope="module")
def imported(artifact, tmp_path_factory):
    if not (GALAXY_BIN / "python").exists():
        pytest.fail("galaxy-importer is not installed: tools/venvs.sh galaxy (make test does it)")
    work = tmp_path_factory.mktemp("import")
    (work / "tmp").mkdir()
    config = work / "importer.cfg"
    config.write_text(
        "[galaxy-importer]\nRUN_ANSIBLE_TEST = False\nRUN_ANSIBLE_LINT = True\nRUN_ANSIBLE_DOC = True\n"
        "CHECK_CHANGELOG = True\nCHECK_REQUIRED_TAGS = False\nREQUIRE_V1_OR_GREATER = False\n"
        f"ANSIBLE_LOCAL_TMP = {work}/tmp\nTMP_ROOT_DIR = {work}/tmp\n"
    )
    # It sets ANSIBLE_COLLECTIONS_PATH to its own folder; its ansible-lint finds the declared
    # dependencies (and nothing else: its venv has ansible-core alone) on the Python path.
    install(artifact, work / "deps")
    env = only(work / "deps")
    env.update(
        GALAXY_IMPORTER_CONFIG=str(config),
        PATH="%s:%s" % (GALAXY_BIN, os.environ["PATH"]),
        PYTHONPATH=str(work / "deps"),
        ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="True",
    )
    out = subprocess.run(
        [GALAXY_BIN / "python", "-m", "galaxy_importer.main", artifact[0]],
        capture_output=True,
        text=True,
        env=env,
        cwd=work,
        check=False,
    )
    return out, json.loads((work / "importer_result.json").read_text()) if out.returncode == 0 else None


def test_galaxy_importer_accepts_the_artifact_and_its_lint_finds_nothing(imported):
    out, result = imported
    text = out.stdout + out.stderr
    assert out.returncode == 0 and "Importer processing completed successfully" in text, text[-3000:]
    warnings = [line for line in text.splitlines() if line.startswith(("WARNING", "ERROR"))]
    # The one note it always gives: sanity's exceptions exist (tests/sanity/ignore-2.21.txt).
    assert [w for w in warnings if "Ignore files skip ansible-test sanity tests" not in w] == [], warnings
    assert result["metadata"]["dependencies"] == {
        "community.docker": ">=5.4.0,<6.0.0",
        "community.general": ">=13.5.0,<14.0.0",
        "ansible.posix": ">=2.2.2,<3.0.0",
    }


def test_every_filter_module_and_role_galaxy_lists_is_documented_once(imported):
    result = imported[1]
    assert result, "the import failed"
    contents = result["contents"]
    names = collections.Counter((c["content_type"], c["name"]) for c in contents)
    assert [k for k, n in names.items() if n > 1] == []
    listed = {t: {c["name"] for c in contents if c["content_type"] == t} for t in DOCUMENTED}
    undocumented = sorted(
        (c["content_type"], c["name"]) for c in contents if c["content_type"] in DOCUMENTED and not c["description"]
    )
    assert undocumented == []
    filters = {p.stem for p in (ROOT / "plugins" / "filter").glob("*.py")}
    assert listed["filter"] == filters and len(filters) > 50
    assert listed["role"] == {p.name for p in (ROOT / "roles").iterdir()}
    assert listed["module"] == {p.stem for p in (ROOT / "plugins" / "modules").glob("*.py")}
    # The docs blob carries each role's README as Galaxy renders it.
    blob = {c["content_name"]: c for c in result["docs_blob"]["contents"] if c["content_type"] == "role"}
    assert "## Variables" in blob["engine"]["readme_html"] or "Variables" in blob["engine"]["readme_html"]
    controller = {c["name"] for c in contents if c["content_type"] == "action"}
    assert controller <= listed["module"], controller - listed["module"]
