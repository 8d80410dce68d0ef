#!/usr/bin/env python3
"""The collection's AWX objects: render them, apply them to an AWX, or lay out a job as AWX does.

tools/awx.py render [-s SETTINGS] [-o FILE]
    The objects in awxkit's import layout (JSON): organization, project, inventory and its
    source, execution environment, credentials, a job template per operation with its survey,
    the deploy and upgrade workflows. SETTINGS (YAML) overrides plugins/plugin_utils/operations/_awx.py's
    DEFAULT_SETTINGS (organization, project scm_url, inventory source_path, EE image ...).

tools/awx.py apply [-s SETTINGS]
    `awx import` of those objects into the AWX at $CONTROLLER_HOST with $CONTROLLER_OAUTH_TOKEN
    (awxkit's own variables; nothing secret in an argument). The credentials' secrets are read
    from the files named by K3_AWX_SSH_KEY_FILE, K3_AWX_VAULT_PASSWORD_FILE,
    K3_AWX_API_KEY_FILE, K3_AWX_ADMIN_API_KEY_FILE and K3_AWX_MONITORING_PASSWORD_FILE when set,
    and only ever go to awx's standard input.

tools/awx.py job OPERATION DIR -i INVENTORY [-e JSON] [--tags T] [--limit L] [--check]
    DIR becomes the private data folder AWX gives ansible-runner for that job template: the
    project (this checkout's tracked files), the inventory as AWX writes it (a script printing
    the source's hosts), env/extravars (the survey's defaults, then -e), env/cmdline (tags,
    limit, check), env/envvars (the collections path AWX sets); requirements_collections is
    for the collections a project sync installs. Then:
    ansible-runner run DIR -p PLAYBOOK (printed on the last line).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / ".collections"))

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations._awx import (  # noqa: E402
    awx_assets,
    load_operations,
    survey_defaults,
)
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._variables import load_contract  # noqa: E402

# The file each credential type's secret input is read from (by the type's kind: Machine, Vault,
# the collection's API-key type).
SECRET_FILES = {
    "ssh": [("K3_AWX_SSH_KEY_FILE", "ssh_key_data")],
    "vault": [("K3_AWX_VAULT_PASSWORD_FILE", "vault_password")],
    "cloud": [
        ("K3_AWX_API_KEY_FILE", "api_key"),
        ("K3_AWX_ADMIN_API_KEY_FILE", "admin_api_key"),
        ("K3_AWX_MONITORING_PASSWORD_FILE", "monitoring_password"),
    ],
}


def settings_of(path):
    if not path:
        return {}
    return yaml.safe_load(Path(path).read_text()) or {}


def assets(path):
    return awx_assets(str(ROOT), settings_of(path), load_contract(str(ROOT)))


def render(args):
    text = json.dumps(assets(args.settings), indent=2, sort_keys=False) + "\n"
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)


def apply(args):
    if not os.environ.get("CONTROLLER_HOST"):
        sys.exit("apply: set CONTROLLER_HOST (the AWX URL) and CONTROLLER_OAUTH_TOKEN (a token of an AWX user)")
    data = assets(args.settings)
    for credential in data["credentials"]:
        for variable, field in SECRET_FILES[credential["credential_type"]["kind"]]:
            if os.environ.get(variable):
                credential["inputs"][field] = Path(os.environ[variable]).read_text().rstrip("\n")
    awx = Path(sys.executable).parent / "awx"
    proc = subprocess.run([str(awx), "import"], input=json.dumps(data), text=True, check=False)
    sys.exit(proc.returncode)


def inventory_script(source):
    """The inventory as AWX gives it to a job: a script that prints what the source imported. AWX
    keeps a group's variables on the group (--export), so the controller's implicit localhost, where
    verify and the plan run, sees those of group all too (k3_tls_ca, say)."""
    listed = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-inventory"), "-i", str(source), "--list", "--export"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
    text = json.dumps(json.loads(listed), sort_keys=True)
    return "#! /usr/bin/env python3\n# -*- coding: utf-8 -*-\nimport json\nprint(json.dumps(json.loads(%r)))\n" % text


def job(args):
    operations = load_operations(str(ROOT))["operations"]
    if args.operation not in operations:
        sys.exit("job: no operation %s (operations: %s)" % (args.operation, ", ".join(operations)))
    op = operations[args.operation]
    pdd = Path(args.dir).resolve()
    for sub in ("project", "inventory", "env", "requirements_collections"):
        (pdd / sub).mkdir(parents=True, exist_ok=True)
    pdd.chmod(0o700)
    # The project as AWX's project update leaves it: the repository's tracked files.
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "HEAD"], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(pdd / "project")], input=archive, check=True)
    script = pdd / "inventory" / "hosts"
    script.write_text(inventory_script(args.inventory))
    script.chmod(0o700)
    extravars = survey_defaults(str(ROOT), op, load_contract(str(ROOT)))
    extravars.update(json.loads(args.extra_vars or "{}"))
    env = pdd / "env"
    (env / "extravars").write_text(json.dumps(extravars))
    (env / "extravars").chmod(0o600)
    cmdline = []
    if args.check:
        cmdline.append("--check")
    if args.tags:
        cmdline += ["-t", args.tags]
    if args.limit:
        cmdline += ["-l", args.limit]
    (env / "cmdline").write_text(shlex.join(cmdline))
    # The variable AWX 24 sets (ansible-core 2.19 and newer read ANSIBLE_COLLECTIONS_PATH only: the
    # project's ansible.cfg names the same folders, relative to the project).
    paths = [str(pdd / "requirements_collections"), "~/.ansible/collections", "/usr/share/ansible/collections"]
    (env / "envvars").write_text(json.dumps({"ANSIBLE_COLLECTIONS_PATHS": ":".join(paths)}))
    print("ansible-runner run %s -p %s" % (pdd, op["playbook"]))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("render")
    p.add_argument("-s", "--settings")
    p.add_argument("-o", "--output")
    p.set_defaults(func=render)
    p = sub.add_parser("apply")
    p.add_argument("-s", "--settings")
    p.set_defaults(func=apply)
    p = sub.add_parser("job")
    p.add_argument("operation")
    p.add_argument("dir")
    p.add_argument("-i", "--inventory", required=True)
    p.add_argument("-e", "--extra-vars")
    p.add_argument("--tags")
    p.add_argument("--limit")
    p.add_argument("--check", action="store_true")
    p.set_defaults(func=job)
    args = parser.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
