# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Running Graphviz's ``dot`` on the controller: ``render_svg(source)``.

``dot -Tsvg`` reads the source on its standard input; its SVG is reduced to the bare ``<svg>``
element (no XML prolog, doctype or comments) to inline in the page. A missing or failing ``dot``
is a reason (``problem``), not an error: the page is written without its picture.
"""

from __future__ import annotations

import re
import shutil
import subprocess

GRAPHVIZ_PACKAGE = "graphviz"
DOT_TIMEOUT = 60


def inline_svg(text):
    """``dot -Tsvg`` output reduced to its ``<svg>`` element: no XML prolog, doctype or comments."""
    start = text.find("<svg")
    if start < 0:
        raise ValueError("no <svg> element in the output of dot")
    body = re.sub(r"<!--.*?-->\n?", "", text[start:], flags=re.S)
    return body.strip() + "\n"


def render_svg(source, dot=None, timeout=DOT_TIMEOUT):
    """``{"svg", "problem", "missing"}``: the picture, or why there is none (``dot`` not found or failing)."""
    binary = dot or shutil.which("dot")
    if not binary or not shutil.which(binary):
        return {"svg": None, "missing": True, "problem": "Graphviz's dot is not installed on the controller"}
    try:
        proc = subprocess.run(
            [binary, "-Tsvg"], input=source, capture_output=True, text=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"svg": None, "missing": False, "problem": "%s -Tsvg did not run: %s" % (binary, exc)}
    if proc.returncode:
        first = (proc.stderr.strip().splitlines() or ["no message"])[0]
        return {
            "svg": None,
            "missing": False,
            "problem": "%s -Tsvg failed (exit %d): %s" % (binary, proc.returncode, first),
        }
    try:
        return {"svg": inline_svg(proc.stdout), "missing": False, "problem": None}
    except ValueError as exc:
        return {"svg": None, "missing": False, "problem": str(exc)}
