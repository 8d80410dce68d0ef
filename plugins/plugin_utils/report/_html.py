# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The page: report.html rendered from its Jinja2 template, plugins/plugin_utils/data/plan_report.html.j2.

One self-contained page (inline CSS and SVG, no script, no external file): the plan's facts, the
picture (or why there is none, with the Graphviz source), the hosts, the services per host and the
start order. The texts come from report/_model.py; the template holds all the markup.

The template is rendered with autoescaping on, so every value is text. Its ``finalize`` escapes
with ``html.escape`` (``&quot;`` and ``&#x27;``, the page's entities since it was first written)
and leaves what is already markup alone: only dot's SVG, which dot escaped itself. Undefined names
fail (``StrictUndefined``). Nothing in the page changes between two runs of the same plan.
"""

from __future__ import annotations

import functools
import html

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from ansible_collections.kimi_k3.serving.plugins.plugin_utils._paths import DATA_DIR
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.report._model import page_data
from ansible_collections.kimi_k3.serving.plugins.plugin_utils.report._render import GRAPHVIZ_PACKAGE

TEMPLATE_DIR = DATA_DIR
TEMPLATE = "plan_report.html.j2"


def _escape(value):
    """Every ``{{ value }}`` of the template: None as nothing, markup as is, anything else escaped."""
    if isinstance(value, Markup):
        return value
    return Markup(html.escape("" if value is None else str(value), quote=True))


@functools.cache
def _template():
    env = Environment(
        loader=FileSystemLoader(TEMPLATE_DIR),
        autoescape=True,
        finalize=_escape,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    return env.get_template(TEMPLATE)


def report_page(plan, groups, picture, dot_source=None):
    """The page, with ``picture`` as ``render_svg`` gives it: ``{"svg", "problem", "missing"}``.

    Without an SVG the picture's place holds a note: ``problem``, and the fix (install Graphviz
    when ``missing``, else check it), then ``dot_source`` to read; or, when ``skipped`` (too many
    hosts to read in a picture), ``problem`` alone.
    """
    svg = picture.get("svg")
    return _template().render(
        **page_data(plan, groups),
        svg=Markup(svg.rstrip("\n")) if svg else None,
        problem=picture.get("problem"),
        missing=picture.get("missing", True),
        skipped=picture.get("skipped", False),
        dot_source=dot_source,
        package=GRAPHVIZ_PACKAGE,
    )


def report_html(plan, groups=None, svg=None, problem=None, dot_source=None):
    """The page: facts, the picture (or ``problem`` in its place, taken as dot missing), hosts,
    services, start order (``report_page`` with a picture of its own)."""
    return report_page(plan, groups, {"svg": svg, "problem": problem, "missing": True}, dot_source)
