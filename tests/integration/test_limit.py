"""--limit and roles on their own: real ansible-playbook on the example inventories, on the controller only.

The example hosts do not exist (TEST-NET addresses): what runs here is what needs no host - the plan,
computed once on the controller for the whole inventory whatever --limit says, and every role getting
it (the tasks tagged always: the plan and the roles' argument checks). Anything that would contact a
host would show up as unreachable in the recap. The roles' own tasks under --limit run on the
sandbox's real test hosts (tests/cluster/test_site_limit_check.py).
"""

from __future__ import annotations

import json
import re

import pytest
from conftest import EXAMPLES, ROOT, example_plan
from helpers.ansible_run import ansible_playbook


def run(playbook, *args, inventory, check=True):
    return ansible_playbook(playbook, *args, inventory=inventory, check=check, timeout=600)


def recap(output):
    return {
        m.group(1): {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
        for m in re.finditer(r"^(\S+)\s+:\s+(ok=.*)$", output, re.M)
    }


def files(folder):
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# (example, a host to limit to that is not node 0 of anything where the example has one)
LIMITS = [
    ("nvidia-tep16", "gb300-n1"),
    ("mi355x-pd-1p2d-c24", "mi355x-d2"),
    ("a3-pd-8p8d", sorted(example_plan("a3-pd-8p8d")["hosts"])[-1]),
    ("nvidia-tp8", next(iter(example_plan("nvidia-tp8")["hosts"]))),
]


@pytest.mark.parametrize(("name", "host"), LIMITS)
def test_plan_with_limit_writes_the_same_plan_as_without(name, host, tmp_path):
    inventory = EXAMPLES / name / "hosts.yml"
    whole = tmp_path / "whole"
    limited = tmp_path / "limited"
    run(ROOT / "playbooks" / "plan.yml", "-e", "k3_plan_dir=%s" % whole, inventory=inventory)
    out = run(ROOT / "playbooks" / "plan.yml", "-e", "k3_plan_dir=%s" % limited, "--limit", host, inventory=inventory)
    assert files(limited) == files(whole)
    plan = json.loads((limited / "plan.json").read_text())
    assert sorted(plan["hosts"]) == sorted(example_plan(name)["hosts"]) and len(plan["hosts"]) >= 1
    # The play ran on the limited host only, its tasks on the controller; nothing was contacted.
    counts = recap(out.stdout)
    assert list(counts) == [host], out.stdout
    assert counts[host]["unreachable"] == 0 and counts[host]["failed"] == 0
    assert "[%s -> localhost]" % host in out.stdout
    again = run(ROOT / "playbooks" / "plan.yml", "-e", "k3_plan_dir=%s" % limited, "--limit", host, inventory=inventory)
    assert recap(again.stdout)[host]["changed"] == 0


def test_plan_without_limit_still_runs_on_localhost(tmp_path):
    out = run(
        ROOT / "playbooks" / "plan.yml",
        "-e",
        "k3_plan_dir=%s" % tmp_path,
        inventory=EXAMPLES / "nvidia-tep16" / "hosts.yml",
    )
    counts = recap(out.stdout)
    assert counts["localhost"]["changed"] == 1
    assert all(c["unreachable"] == 0 and c["changed"] == 0 for h, c in counts.items() if h != "localhost")


@pytest.mark.parametrize(("name", "host"), LIMITS[:3])
def test_site_with_limit_check_plans_the_whole_inventory_once_and_every_role_play_has_it(name, host, tmp_path):
    dest = tmp_path / "plan"
    out = run(
        "site.yml",
        "-e",
        "k3_plan_dir=%s" % dest,
        "--limit",
        host,
        "--check",
        "--tags",
        "plan",
        inventory=EXAMPLES / name / "hosts.yml",
    )
    text = out.stdout
    # --check: the plan is computed (and its diff reported) but not written.
    assert not dest.exists()
    # Computed once, on the controller, for every host of the inventory.
    assert text.count("TASK [kimi_k3.serving.k3_plan : Compute the plan of the whole inventory") == 1
    for planned in example_plan(name)["hosts"]:
        assert re.search(r"^    - %s\s" % re.escape(planned), text, re.M), planned
    # Every later play that runs one of the roles on the host finds the plan there: the role's
    # first task, which includes k3_plan when a run has no plan, skips (the plan play computed it).
    plan_plays = re.findall(r"Compute the plan, unless this run has one already\] \*+\n(\S+)", text)
    assert plan_plays[0] == "included:" and set(plan_plays[1:]) <= {"skipping:"}, plan_plays
    after = re.findall(r"The deployment's plan, when this run has none yet\] \*+\n(\S+)", text)
    assert len(after) >= 3 and set(after) == {"skipping:"}, text
    counts = recap(text)
    assert list(counts) == [host], text
    assert counts[host]["unreachable"] == 0 and counts[host]["failed"] == 0


def test_site_with_limit_check_plan_matches_the_plan_without_limit(tmp_path):
    whole = tmp_path / "whole"
    limited = tmp_path / "limited"
    inventory = EXAMPLES / "mi355x-pd-1p2d-c24" / "hosts.yml"
    run("site.yml", "-e", "k3_plan_dir=%s" % whole, "--tags", "plan", inventory=inventory)
    run("site.yml", "-e", "k3_plan_dir=%s" % limited, "--tags", "plan", "--limit", "mi355x-d1", inventory=inventory)
    assert files(limited) == files(whole)


ROLE_ALONE = """\
---
- name: One role on its own, without the plan play
  hosts: {group}
  gather_facts: false
  roles:
    - role: kimi_k3.serving.{role}
  post_tasks:
    - name: The role's plan variable holds the plan it got
      ansible.builtin.debug:
        msg: >-
          services of {{{{ inventory_hostname }}}}:
          {{{{ {role}_plan | kimi_k3.serving.host_services(inventory_hostname) | map(attribute='name') | join(',') }}}}
      tags: [always]
"""


@pytest.mark.parametrize(
    ("name", "group", "role", "host"),
    [
        ("nvidia-tep16", "engine", "engine", "gb300-n1"),
        ("nvidia-tep16", "engine", "nvidia", None),
        ("mi355x-pd-1p2d-c24", "router", "router", None),
        ("a3-pd-8p8d", "metaservice", "metaservice", None),
        ("mi355x-pd-1p2d-c24", "prefill:decode", "rocm", "mi355x-d2"),
    ],
)
def test_a_role_on_its_own_gets_the_plan_itself(name, group, role, host, tmp_path):
    book = tmp_path / "alone.yml"
    book.write_text(ROLE_ALONE.format(group=group, role=role))
    dest = tmp_path / "plan"
    args = [book, "-e", "k3_plan_dir=%s" % dest]
    # Only what is tagged always runs: what needs no host (the example hosts do not exist).
    args += ["--tags", "k3-no-such-tag"] + (["--limit", host] if host else [])
    out = run(*args, inventory=EXAMPLES / name / "hosts.yml")
    text = out.stdout
    assert text.count("TASK [kimi_k3.serving.k3_plan : Compute the plan of the whole inventory") == 1
    plan = json.loads((dest / "plan.json").read_text())
    assert plan["hosts"] == json.loads(json.dumps(example_plan(name)["hosts"]))
    hosts = [host] if host else list(recap(text))
    assert hosts
    for h in hosts:
        expected = ",".join(s["name"] for s in plan["hosts"].get(h, {}).get("services", []))
        assert "services of %s: %s" % (h, expected) in text
    assert all(c["unreachable"] == 0 and c["failed"] == 0 for c in recap(text).values())


FILTER_ONLY = """\
---
- name: The plan filters on their own
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Read a host's services
      ansible.builtin.debug:
        msg: "{{{{ {plan} | kimi_k3.serving.host_services('n0') }}}}"
"""


@pytest.mark.parametrize(
    ("plan", "message"),
    [
        (
            "hostvars['localhost']['k3_plan_result']['plan'] | default(none)",
            "host_services: no plan: run the plan first",
        ),
        (
            "{'version': 99, 'hosts': {}}",
            "host_services: the plan has version 99; this collection (kimi_k3.serving) reads plans",
        ),
    ],
)
def test_without_a_readable_plan_the_filter_says_what_to_run_first(plan, message, tmp_path):
    book = tmp_path / "filter.yml"
    book.write_text(FILTER_ONLY.format(plan=plan))
    out = run(book, inventory="localhost,", check=False)
    assert out.returncode != 0
    text = out.stdout + out.stderr
    assert message in text, text
    line = next(x for x in text.splitlines() if message in x)
    assert "Fix: re-run the plan" in line or "(ansible-playbook playbooks/plan.yml" in line
