# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The AWX objects of the collection, as data for ``awx import`` (awxkit).

``awx_assets(root, settings)`` reads the operations (``playbooks/vars/operations.yml``), the
roles' argument specs and the variable contract, and returns the objects in the layout awxkit's
``awx export`` writes and ``awx import`` applies: an organization, the project (the collection's
repository; AWX installs ``collections/requirements.yml`` when it syncs), an inventory sourced
from a file of the project, the execution environment, machine, vault and API-key credentials
(the key reaches the playbooks through a credential type's injector, never as a clear extra
variable), one job template per operation with its survey, and the workflows (deploy; upgrade with an
approval after its canary).

Every survey question is made from a declaration: a role option (type, choices, default), a
``k3_*`` variable of the contract, or an operation's own option; free text only where the
declaration has no choices. ``survey_question`` raises ``AwxError`` for a type no survey can hold.
Secrets are never in the data: a credential's secret inputs are left for the operator (or filled
in memory by ``tools/awx.py apply`` from files named in its environment).
"""

from __future__ import annotations

import copy
import os

import yaml

DEFAULT_SETTINGS = {
    "organization": "Kimi-K3",
    "project": {
        "name": "kimi_k3.serving",
        # Where AWX clones the project from; the site's own mirror of the collection's repository.
        "scm_url": "https://example.invalid/kimi_k3/serving.git",
        "scm_branch": "main",
    },
    "inventory": {
        "name": "Kimi-K3",
        # The site's inventory, a file (or folder) of the project.
        "source_path": "inventories/prod/hosts.yml",
    },
    "execution_environment": {
        "name": "Kimi-K3 execution environment",
        "image": "localhost/kimi-k3-ee:latest",
    },
    "credentials": {
        "machine": {"name": "Kimi-K3 SSH", "username": "root"},
        "vault": {"name": "Kimi-K3 Vault"},
        "api_key": {"name": "Kimi-K3 API key"},
    },
    "prefix": "Kimi-K3",
}

API_KEY_TYPE = {
    "name": "Kimi-K3 API key",
    "description": "The deployment's secrets, kept by AWX: a client's key (k3_api_key), the admin key "
    "(k3_admin_api_key) the operations use behind the front door, and the monitoring's password "
    "(k3_monitoring_password).",
    "kind": "cloud",
    "inputs": {
        "fields": [
            {"id": "api_key", "label": "Client API key", "type": "string", "secret": True},
            {"id": "admin_api_key", "label": "Admin API key", "type": "string", "secret": True},
            {"id": "monitoring_password", "label": "Monitoring password", "type": "string", "secret": True},
        ],
        "required": ["api_key", "admin_api_key", "monitoring_password"],
    },
    "injectors": {
        "extra_vars": {
            "k3_api_key": "{{ api_key }}",
            "k3_admin_api_key": "{{ admin_api_key }}",
            "k3_monitoring_password": "{{ monitoring_password }}",
        }
    },
}
MANAGED_TYPES = {"machine": ("Machine", "ssh"), "vault": ("Vault", "vault")}
# Role options whose values are the keys of a data file (the role refuses any other, naming them).
DATA_CHOICES = {
    "benchmark_scenarios": (("plugins", "plugin_utils", "data", "benchmark_scenarios.yml"), "scenarios"),
}
QUESTION_TYPES = {"int": "integer", "float": "float", "str": "text", "path": "text"}


class AwxError(Exception):
    """A declaration or setting the AWX objects cannot be made from; the message names it."""


def _read(path):
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle) or {}


def load_operations(root):
    return _read(os.path.join(root, "playbooks", "vars", "operations.yml"))


def role_options(root, role):
    """A role's options (meta/argument_specs.yml); a list whose values the role checks against a
    data file of the collection gets that file's values as its choices."""
    specs = _read(os.path.join(root, "roles", role, "meta", "argument_specs.yml"))
    options = copy.deepcopy(((specs.get("argument_specs") or {}).get("main") or {}).get("options") or {})
    for name, (path, what) in DATA_CHOICES.items():
        if name in options and not options[name].get("choices"):
            options[name]["choices"] = list(_read(os.path.join(root, *path)).get(what) or {})
    return options


def _merge(base, override):
    out = copy.deepcopy(base)
    for key, value in (override or {}).items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _text(value):
    return "true" if value is True else "false" if value is False else str(value)


def survey_question(name, spec):
    """One survey question from a declaration (argument-spec form: type, elements, choices, default,
    required, description, min, max)."""
    kind = spec.get("type", "str")
    choices = spec.get("choices")
    question = {
        "variable": name,
        "question_name": name,
        "question_description": " ".join(_lines(spec.get("description"))),
        "required": bool(spec.get("required", False)),
        "new_question": True,
    }
    default = spec.get("default")
    if kind == "list":
        if not choices:
            raise AwxError("%s: a list without choices cannot be a survey question (declare its choices)" % name)
        question.update(type="multiselect", choices=[_text(c) for c in choices])
        if default:
            question["default"] = "\n".join(_text(d) for d in default)
    elif kind == "bool":
        question.update(type="multiplechoice", choices=["true", "false"])
        if default is not None:
            question["default"] = _text(bool(default))
    elif choices:
        question.update(type="multiplechoice", choices=[_text(c) for c in choices])
        if default is not None:
            question["default"] = _text(default)
    elif kind in QUESTION_TYPES:
        question["type"] = QUESTION_TYPES[kind]
        if kind in ("int", "float"):
            for bound in ("min", "max"):
                if spec.get(bound) is not None:
                    question[bound] = spec[bound]
        if default not in (None, ""):
            question["default"] = default
    elif kind == "secret":
        raise AwxError("%s is a secret: it comes from a credential, never from a survey" % name)
    else:
        raise AwxError("%s: type %s cannot be a survey question" % (name, kind))
    return question


def _workflow(wf, org, inventory, templates):
    """A workflow job template and its nodes: each runs an operation's template (with tags and extra
    variables its survey asks for) or is an approval node (``approval``: name, description, timeout)."""
    wf_key = _key("workflow_job_template", organization=org, name="%s" % wf["name"])
    node_keys = {
        n["id"]: _key("workflow_job_template_node", workflow_job_template=wf_key, identifier=n["id"])
        for n in wf["nodes"]
    }
    nodes = []
    for node in wf["nodes"]:
        if "approval" not in node and node.get("operation") not in templates:
            raise AwxError("workflow node %s runs %s, which is not an operation" % (node["id"], node.get("operation")))
        for edge in ("on_success", "on_failure"):
            for target in node.get(edge) or []:
                if target not in node_keys:
                    raise AwxError("workflow node %s: %s names %s, which is not a node" % (node["id"], edge, target))
        related = {
            "success_nodes": [node_keys[t] for t in node.get("on_success") or []],
            "failure_nodes": [node_keys[t] for t in node.get("on_failure") or []],
            "always_nodes": [],
        }
        entry = {
            "identifier": node["id"],
            "unified_job_template": None if "approval" in node else templates[node["operation"]],
            "job_tags": ",".join(node.get("tags") or []) or None,
            "extra_data": dict(node.get("extra_vars") or {}),
            "all_parents_must_converge": False,
            "natural_key": node_keys[node["id"]],
            "related": related,
        }
        if "approval" in node:
            # awxkit creates the approval template in the node's place.
            related["create_approval_template"] = dict(node["approval"])
        nodes.append(entry)
    return {
        "name": wf["name"],
        "description": wf.get("description", ""),
        "organization": org,
        "inventory": inventory,
        "natural_key": wf_key,
        "related": {"workflow_nodes": nodes},
    }


def _lines(description):
    if isinstance(description, list):
        return [str(d) for d in description]
    return [str(description)] if description else []


def operation_variables(root, operation, contract=None):
    """name -> declaration (argument-spec form) of every variable the operation's survey asks for."""
    out = {}
    for name, spec in (operation.get("options") or {}).items():
        # survey false: checked when the playbook starts, set as an extra variable, never asked.
        if spec.get("survey", True):
            out[name] = {k: v for k, v in spec.items() if k != "survey"}
    for role, names in (operation.get("roles") or {}).items():
        options = role_options(root, role)
        for name in names:
            if name not in options:
                raise AwxError("%s is not an option of role %s (roles/%s/meta/argument_specs.yml)" % (name, role, role))
            out[name] = dict(options[name])
    for name in operation.get("parameters") or []:
        decl = contract.get(name) if contract is not None else None
        if decl is None:
            raise AwxError("%s is not declared in plugins/plugin_utils/data/variables.yml" % name)
        out[name] = dict(decl.spec)
    return out


def survey_spec(name, description, variables):
    return {
        "name": name,
        "description": description,
        "spec": [survey_question(var, spec) for var, spec in variables.items()],
    }


def _key(type_, **fields):
    """A natural key: how awxkit finds an object (its type and the fields that name it)."""
    return dict(fields, type=type_)


def awx_assets(root, settings=None, contract=None):
    """The AWX objects, in awxkit's import layout."""
    conf = _merge(DEFAULT_SETTINGS, settings)
    data = load_operations(root)
    operations = data.get("operations") or {}
    prefix = conf["prefix"]

    org = _key("organization", name=conf["organization"])
    ee = _key("execution_environment", name=conf["execution_environment"]["name"])
    project = _key("project", organization=org, name=conf["project"]["name"])
    inventory = _key("inventory", organization=org, name=conf["inventory"]["name"])
    types = {kind: _key("credential_type", name=n, kind=k) for kind, (n, k) in MANAGED_TYPES.items()}
    types["api_key"] = _key("credential_type", name=API_KEY_TYPE["name"], kind=API_KEY_TYPE["kind"])
    creds = {}
    credentials = []
    for kind in ("machine", "vault", "api_key"):
        cred = conf["credentials"][kind]
        creds[kind] = _key("credential", organization=org, name=cred["name"], credential_type=types[kind])
        inputs = {"username": cred["username"]} if kind == "machine" else {}
        credentials.append(
            {
                "name": cred["name"],
                "description": {
                    "machine": "SSH to the deployment's hosts (its private key is the operator's to add).",
                    "vault": "The Ansible Vault password of the inventory's encrypted variables.",
                    "api_key": "The deployment's keys and the monitoring's password, injected into every job.",
                }[kind],
                "organization": org,
                "credential_type": types[kind],
                "inputs": inputs,
                "natural_key": creds[kind],
            }
        )

    job_templates = []
    templates = {}
    for op_name, op in operations.items():
        variables = operation_variables(root, op, contract)
        name = "%s %s" % (prefix, op_name.replace("_", " "))
        templates[op_name] = _key("job_template", organization=org, name=name)
        related = {"credentials": [creds["machine"], creds["vault"], creds["api_key"]]}
        if variables:
            related["survey_spec"] = survey_spec(name, op.get("description", ""), variables)
        job_templates.append(
            {
                "name": name,
                "description": op.get("description", ""),
                "job_type": "run",
                "inventory": inventory,
                "project": project,
                "playbook": op["playbook"],
                "execution_environment": ee,
                "job_tags": "",
                "ask_tags_on_launch": bool(op.get("tags")),
                "ask_limit_on_launch": bool(op.get("limit")),
                "ask_job_type_on_launch": bool(op.get("check")),
                "ask_diff_mode_on_launch": True,
                "ask_variables_on_launch": False,
                "survey_enabled": bool(variables),
                "natural_key": templates[op_name],
                "related": related,
            }
        )

    workflows = [_workflow(wf, org, inventory, templates) for wf in data.get("workflows") or []]

    return {
        "organizations": [{"name": conf["organization"], "description": "Kimi-K3 serving on vLLM", "natural_key": org}],
        "credential_types": [dict(API_KEY_TYPE, natural_key=types["api_key"])],
        "credentials": credentials,
        "execution_environments": [
            {
                "name": conf["execution_environment"]["name"],
                "image": conf["execution_environment"]["image"],
                "pull": "missing",
                "description": (
                    "ansible-core, ansible-runner, kimi_k3.serving and what its playbooks import"
                    " (execution-environment.yml)."
                ),
                "natural_key": ee,
            }
        ],
        "projects": [
            {
                "name": conf["project"]["name"],
                "description": "The collection's repository: its playbooks, profiles and inventories.",
                "organization": org,
                "scm_type": "git",
                "scm_url": conf["project"]["scm_url"],
                "scm_branch": conf["project"]["scm_branch"],
                "scm_update_on_launch": True,
                "default_environment": ee,
                "natural_key": project,
            }
        ],
        "inventory": [
            {
                "name": conf["inventory"]["name"],
                "description": "The deployment's hosts, from a file of the project.",
                "organization": org,
                "variables": "",
                "natural_key": inventory,
            }
        ],
        "inventory_sources": [
            {
                "name": "%s from the project" % conf["inventory"]["name"],
                "description": conf["inventory"]["source_path"],
                "inventory": inventory,
                "source": "scm",
                "source_project": project,
                "source_path": conf["inventory"]["source_path"],
                "overwrite": True,
                "overwrite_vars": True,
                "update_on_launch": True,
                "natural_key": _key(
                    "inventory_source", name="%s from the project" % conf["inventory"]["name"], inventory=inventory
                ),
            }
        ],
        "job_templates": job_templates,
        "workflow_job_templates": workflows,
    }


def survey_answer(question):
    """What AWX sends for a question left at its default: a list for multiselect, a number for
    integer and float, text otherwise; nothing (None) without a default."""
    if "default" not in question or question["default"] in (None, ""):
        return None
    default = question["default"]
    if question["type"] == "multiselect":
        return [line for line in str(default).split("\n") if line]
    if question["type"] == "integer":
        return int(default)
    if question["type"] == "float":
        return float(default)
    return str(default)


def survey_defaults(root, operation, contract=None):
    """The extra variables of a launch that takes every survey question's default."""
    out = {}
    for name, spec in operation_variables(root, operation, contract).items():
        answer = survey_answer(survey_question(name, spec))
        if answer is not None:
            out[name] = answer
    return out
