"""The AWX objects (tools/awx.py, plugins/plugin_utils/operations/_awx.py) and a job template run the way AWX runs it.

No AWX server can run here: what is proved is what AWX reads. The objects are in awxkit's import
layout: every job template names a playbook of the project, every survey question is a declared
variable (an operation's option in playbooks/vars/operations.yml, a role option of its
meta/argument_specs.yml, or a k3_* variable of the contract) with the type and choices its
declaration gives, every workflow node runs a template that exists and the edges join nodes that
exist; no secret is in them. Then the plan job template is laid out as AWX lays out a job for
ansible-runner (the project's files, the inventory as the script AWX writes, env/extravars from
the survey's defaults, the collections path AWX sets, the collections of the project's
requirements installed from their tarballs as a project sync does) and run by the real ansible-runner: it
plans what the checkout plans, with the collection from the project itself.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
import yaml
from conftest import EXAMPLES, ROOT, ansible_env, inventory_list, write_sandbox_inventory
from helpers.awx_jobs import awx, checkout_plan, collection_roots, project_sync_collections, run_job

sys.path.insert(0, str(ROOT / ".collections"))

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.operations._awx import (  # noqa: E402
    AwxError,
    survey_question,
)
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.plan._variables import load_contract  # noqa: E402

OPERATIONS = yaml.safe_load((ROOT / "playbooks" / "vars" / "operations.yml").read_text())
QUESTION_TYPE = {"int": "integer", "float": "float", "str": "text", "path": "text"}


@pytest.fixture(scope="module")
def assets():
    return json.loads(awx("render").stdout)


def declaration(operation, name):
    """The declaration of a survey variable, found independently of the generator: the operation's
    own option, else a role's option, else the contract's."""
    options = OPERATIONS["operations"][operation].get("options") or {}
    if name in options:
        return options[name]
    for role in (ROOT / "roles").iterdir():
        spec = role / "meta" / "argument_specs.yml"
        if spec.is_file():
            options = yaml.safe_load(spec.read_text())["argument_specs"]["main"].get("options") or {}
            if name in options:
                return options[name]
    decl = load_contract(str(ROOT)).get(name)
    return decl.spec if decl else None


def test_every_operation_is_a_job_template_of_a_playbook_that_exists(assets):
    templates = {t["name"]: t for t in assets["job_templates"]}
    wanted = {"plan", "site", "verify", "restart", "upgrade", "scale", "remove node", "teardown", "status"}
    wanted |= {"collect logs", "benchmark", "evaluate", "fabric", "rollback"}
    assert {n.removeprefix("Kimi-K3 ") for n in templates} == wanted
    for template in templates.values():
        assert (ROOT / template["playbook"]).is_file(), template["playbook"]
        assert template["project"]["name"] == "kimi_k3.serving" and template["inventory"]["type"] == "inventory"
        creds = {c["credential_type"]["kind"] for c in template["related"]["credentials"]}
        assert creds == {"ssh", "vault", "cloud"}, template["name"]
    # The stage tags AWX offers for site are the tags site.yml's plays really carry.
    site_tags = set()
    for path in [ROOT / "site.yml", *(ROOT / "playbooks").glob("*.yml")]:
        for play in yaml.safe_load(path.read_text()) or []:
            site_tags |= set(play.get("tags") or [])
    assert set(OPERATIONS["operations"]["site"]["tags"]) <= site_tags
    assert templates["Kimi-K3 site"]["ask_tags_on_launch"] and templates["Kimi-K3 site"]["ask_limit_on_launch"]


def test_every_survey_question_is_a_declared_variable_with_its_type_and_choices(assets):
    asked = 0
    for template in assets["job_templates"]:
        survey = template["related"].get("survey_spec")
        assert template["survey_enabled"] == bool(survey), template["name"]
        for question in (survey or {}).get("spec", []):
            asked += 1
            operation = template["name"].removeprefix("Kimi-K3 ").replace(" ", "_")
            decl = declaration(operation, question["variable"])
            assert decl is not None, "%s asks for %s, which nothing declares" % (template["name"], question["variable"])
            kind, choices = decl.get("type", "str"), decl.get("choices")
            if kind == "list":
                # benchmark_scenarios: the role refuses any name but the data file's scenarios.
                if not choices:
                    data = ROOT / "plugins" / "plugin_utils" / "data" / "benchmark_scenarios.yml"
                    choices = list(yaml.safe_load(data.read_text())["scenarios"])
                assert question["type"] == "multiselect" and question["choices"] == choices
            elif kind == "bool":
                assert question["type"] == "multiplechoice" and question["choices"] == ["true", "false"]
            elif choices:
                assert question["type"] == "multiplechoice" and question["choices"] == [str(c) for c in choices]
            else:
                assert question["type"] == QUESTION_TYPE[kind], question
            assert question["required"] == bool(decl.get("required", False)), question
            if "default" in decl and decl["default"] not in (None, "", []):
                default = decl["default"]
                expected = (
                    "\n".join(default)
                    if isinstance(default, list)
                    else str(default).lower()
                    if isinstance(default, bool)
                    else default
                )
                assert question["default"] == expected, question
            # No free text where a choice exists; no password question (secrets are credentials).
            assert question["type"] != "password"
    assert asked >= 15


def test_surveys_refuse_what_cannot_be_asked():
    with pytest.raises(AwxError, match="k3_api_key is a secret"):
        survey_question("k3_api_key", {"type": "secret"})
    with pytest.raises(AwxError, match="evaluate_gates: type dict"):
        survey_question("evaluate_gates", {"type": "dict"})
    with pytest.raises(AwxError, match="a list without choices"):
        survey_question("evaluate_extra_args", {"type": "list"})


def test_the_workflow_runs_templates_that_exist_along_edges_between_its_nodes(assets):
    workflow, upgrade = assets["workflow_job_templates"]
    assert [workflow["name"], upgrade["name"]] == ["Kimi-K3 deploy", "Kimi-K3 upgrade"]
    nodes = workflow["related"]["workflow_nodes"]
    templates = {t["name"]: t for t in assets["job_templates"]}
    ids = [n["identifier"] for n in nodes]
    assert ids == ["plan", "preflight", "prerequisites", "deploy", "verify", "benchmark", "support"]
    for node in nodes:
        template = templates[node["unified_job_template"]["name"]]
        assert node["natural_key"]["workflow_job_template"] == workflow["natural_key"]
        if node["job_tags"]:
            assert template["ask_tags_on_launch"], node  # AWX applies a node's tags only then
        for edge in ("success_nodes", "failure_nodes", "always_nodes"):
            for target in node["related"][edge]:
                assert target["identifier"] in ids and target["type"] == "workflow_job_template_node"
    by_id = {n["identifier"]: n for n in nodes}
    chain = ["plan", "preflight", "prerequisites", "deploy", "verify", "benchmark"]
    for a, b in zip(chain, chain[1:], strict=False):
        assert [t["identifier"] for t in by_id[a]["related"]["success_nodes"]] == [b]
    # A failure once hosts can have changed collects a support bundle; a failed plan or preflight changed nothing.
    for failing in ("prerequisites", "deploy", "verify", "benchmark"):
        assert [t["identifier"] for t in by_id[failing]["related"]["failure_nodes"]] == ["support"]
    assert by_id["preflight"]["job_tags"] == "preflight" and by_id["deploy"]["job_tags"] is None


def test_the_upgrade_workflow_waits_for_an_approval_after_its_canary(assets):
    upgrade = assets["workflow_job_templates"][1]
    nodes = {n["identifier"]: n for n in upgrade["related"]["workflow_nodes"]}
    assert list(nodes) == ["canary", "approve", "rest", "support"]
    canary, approve, rest = nodes["canary"], nodes["approve"], nodes["rest"]
    assert canary["unified_job_template"]["name"] == rest["unified_job_template"]["name"] == "Kimi-K3 upgrade"
    # pause_after is a survey question of the template: AWX takes the node's answer.
    template = next(t for t in assets["job_templates"] if t["name"] == "Kimi-K3 upgrade")
    questions = {q["variable"]: q for q in template["related"]["survey_spec"]["spec"]}
    assert canary["extra_data"] == {"pause_after": 1} and questions["pause_after"]["type"] == "integer"
    assert rest["extra_data"] == {}
    # The approval node runs no template: awxkit creates its approval template in its place.
    assert approve["unified_job_template"] is None
    assert approve["related"]["create_approval_template"]["timeout"] == 86400
    assert [t["identifier"] for t in canary["related"]["success_nodes"]] == ["approve"]
    assert [t["identifier"] for t in approve["related"]["success_nodes"]] == ["rest"]
    assert [t["identifier"] for t in approve["related"]["failure_nodes"]] == ["support"]


def test_no_secret_is_in_the_objects_and_the_key_reaches_jobs_through_a_credential(assets):
    # The credentials carry no secret input (the operator's, or tools/awx.py apply's from files).
    assert {c["name"]: c["inputs"] for c in assets["credentials"]} == {
        "Kimi-K3 SSH": {"username": "root"},
        "Kimi-K3 Vault": {},
        "Kimi-K3 API key": {},
    }
    for template in assets["job_templates"]:
        for question in template["related"].get("survey_spec", {}).get("spec", []):
            assert question["type"] != "password" and "key" not in question["variable"], question
    (ctype,) = assets["credential_types"]
    assert ctype["injectors"] == {
        "extra_vars": {
            "k3_api_key": "{{ api_key }}",
            "k3_admin_api_key": "{{ admin_api_key }}",
            "k3_monitoring_password": "{{ monitoring_password }}",
        }
    }
    assert [f["secret"] for f in ctype["inputs"]["fields"]] == [True, True, True]


def test_site_settings_name_the_repository_the_inventory_and_the_image(tmp_path):
    settings = tmp_path / "awx.yml"
    settings.write_text(
        "project: {scm_url: 'https://git.example.com/ops/kimi-k3.git'}\n"
        "inventory: {source_path: inventories/prod}\n"
        "execution_environment: {image: registry.example.com/kimi-k3-ee:0.1.0}\n"
    )
    data = json.loads(awx("render", "-s", settings).stdout)
    assert data["projects"][0]["scm_url"] == "https://git.example.com/ops/kimi-k3.git"
    assert data["projects"][0]["scm_branch"] == "main"  # the rest stays the default
    assert data["inventory_sources"][0]["source_path"] == "inventories/prod"
    assert data["execution_environments"][0]["image"] == "registry.example.com/kimi-k3-ee:0.1.0"


def test_apply_names_what_it_needs_and_puts_no_secret_in_an_argument(tmp_path):
    env = ansible_env()
    env.pop("CONTROLLER_HOST", None)
    proc = awx("apply", env=env, check=False)
    assert proc.returncode != 0 and "set CONTROLLER_HOST" in proc.stderr
    source = (ROOT / "tools" / "awx.py").read_text()
    assert re.search(r'\[str\(awx\), "import"\], input=', source)  # the objects (and secrets) go to stdin


@pytest.fixture(scope="module")
def collections(tmp_path_factory):
    return project_sync_collections(tmp_path_factory.mktemp("awx-collections"))


def test_the_plan_job_template_runs_in_ansible_runner_as_awx_lays_it_out(collections, tmp_path):
    inventory = EXAMPLES / "nvidia-pd-nixl" / "hosts.yml"
    pdd = tmp_path / "job"
    proc = run_job("plan", pdd, inventory, collections, "-e", json.dumps({"k3_plan_dir": str(tmp_path / "awx-plan")}))
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert (pdd / "artifacts").is_dir() and "PLAY RECAP" in proc.stdout
    # The collection came from the project (its link back to itself, as ansible.cfg names it).
    roots = collection_roots(pdd)
    assert roots["kimi_k3.serving"] == {str(pdd / "project" / ".collections")}, roots
    # The project sync's collections are in the job's folder (community.docker's dependency too).
    synced = pdd / "requirements_collections" / "ansible_collections"
    assert {"community/general", "community/docker", "ansible/posix", "community/library_inventory_filtering_v1"} <= {
        "%s/%s" % (p.parent.name, p.name) for p in synced.glob("*/*")
    }
    awx_plan = json.loads((tmp_path / "awx-plan" / "plan.json").read_text())
    assert awx_plan["hosts"] and awx_plan == checkout_plan(inventory, tmp_path / "checkout-plan")
    assert json.loads((pdd / "env" / "extravars").read_text()) == {"k3_plan_dir": str(tmp_path / "awx-plan")}
    assert (pdd / "env" / "extravars").stat().st_mode & 0o777 == 0o600


def test_a_job_with_survey_defaults_and_the_check_job_type_is_laid_out_as_awx_does(collections, tmp_path):
    """restart's survey defaults (restart_serial 1, confirm no) in env/extravars, --check from the job type."""
    pdd = tmp_path / "job"
    inventory = write_sandbox_inventory(tmp_path / "inventories" / "sandbox", "sandbox")
    awx("job", "restart", pdd, "-i", inventory, "--check")
    assert json.loads((pdd / "env" / "extravars").read_text()) == {"restart_serial": 1, "confirm": "no"}
    assert (pdd / "env" / "cmdline").read_text() == "--check"
    assert (pdd / "project" / "playbooks" / "restart.yml").is_file()
    # The inventory is a script that prints what ansible-inventory read from the source, group
    # variables on their groups as AWX keeps them, values of every type included (the sandbox's
    # group_vars hold booleans, numbers, lists and mappings).
    listed = subprocess.run([pdd / "inventory" / "hosts"], capture_output=True, text=True, check=True).stdout
    assert json.loads(listed) == inventory_list(inventory, export=True) and "false" in listed
    assert json.loads(listed)["all"]["vars"]["k3_tls_ca"].endswith("/.cache/sandbox/tls/ca.pem")
    assert not (pdd / "project" / ".venv").exists()
