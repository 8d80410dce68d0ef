# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""report.html for the plan action: ``report_file(plan, groups)``, the report's steps in order.

The plan as a person reads it, with a picture of the cluster: ``topology`` (report/_topology.py,
the picture as data), ``topology_dot`` (report/_dot.py, its Graphviz source), ``render_svg``
(report/_render.py, ``dot -Tsvg``) and ``report_page`` (report/_html.py, the page). Plain Python,
no Ansible: the page is written either way; without the picture the action warns, naming the
package to install.
"""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.report._dot import topology_dot
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.report._html import report_page
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.report._render import GRAPHVIZ_PACKAGE, render_svg
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.report._topology import topology

REPORT_FILE = "report.html"
# A picture of more hosts is not readable (a box a host), and dot's layout time grows faster than
# the hosts: above this the page keeps its tables and leaves the picture out, saying why.
PICTURE_MAX_HOSTS = 128


def report_file(plan, groups=None, dot=None):
    """``(html, warning)`` for the plan action: the page, and a warning naming the package when the
    picture could not be made (the page is written either way, with a note in the picture's place).
    Above PICTURE_MAX_HOSTS hosts there is no picture and no warning: the note says why."""
    hosts = len(plan.get("hosts") or {})
    if hosts > PICTURE_MAX_HOSTS:
        problem = "a picture of %d hosts is not readable (drawn up to %d hosts)" % (hosts, PICTURE_MAX_HOSTS)
        return report_page(plan, groups, {"svg": None, "problem": problem, "missing": False, "skipped": True}), None
    source = topology_dot(topology(plan, groups))
    result = render_svg(source, dot=dot)
    warning = None
    if result["problem"]:
        fix = (
            "install the package %s on the controller (Debian: apt-get install %s)"
            if result["missing"]
            else "check the controller's Graphviz (package %s; Debian: apt-get install --reinstall %s)"
        ) % (GRAPHVIZ_PACKAGE, GRAPHVIZ_PACKAGE)
        warning = "%s was written without its topology picture: %s. Fix: %s, then run the plan again" % (
            REPORT_FILE,
            result["problem"],
            fix,
        )
    return report_page(plan, groups, result, dot_source=source), warning
