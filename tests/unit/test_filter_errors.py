"""The one way a filter reports bad input (plugins/plugin_utils/filters/_errors.py)."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from conftest import ROOT

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._errors import filter_errors, needs_plan
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._rolling import Filters as Rolling
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.filters._units import Filters as Units


def test_a_value_error_becomes_a_filter_error_with_its_message_after_the_label():
    def bad(value):
        raise ValueError("%s is not a port" % value)

    with pytest.raises(AnsibleFilterError, match=r"^bad: 70000 is not a port$"):
        filter_errors(bad, label="bad")(70000)
    with pytest.raises(AnsibleFilterError, match=r"^70000 is not a port$"):
        filter_errors(bad)(70000)
    assert filter_errors(lambda v: v + 1)(1) == 2


def test_other_errors_pass_through_unless_named():
    def broken(_):
        raise KeyError("prefill")

    with pytest.raises(KeyError):
        filter_errors(broken)(None)
    with pytest.raises(AnsibleFilterError, match="^unit: 'prefill'$"):
        filter_errors(broken, label="unit", errors=(KeyError,))(None)


def test_a_filter_given_no_plan_says_to_run_the_plan_stage():
    for name in ("replica_members", "front_actions", "changed_groups"):
        with pytest.raises(AnsibleFilterError, match="^%s needs the plan .*run the plan stage first$" % name):
            Rolling().filters()[name]({"no": "plan"}, {})
    with pytest.raises(ValueError, match="status_report needs the plan"):
        needs_plan(None, "status_report")
    with pytest.raises(AnsibleFilterError, match="^env_file: "):
        Units().filters()["env_file"]({"A": "1"}, "no-such-format")


def test_no_filter_module_maps_errors_its_own_way():
    for path in (ROOT / "plugins" / "plugin_utils" / "filters").glob("_*.py"):
        if path.name not in ("_errors.py",):
            assert "AnsibleFilterError" not in path.read_text(), path.name
