# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The picture's Graphviz source: ``topology_dot(model)`` of a report/_topology.py model.

Left to right: clients, front doors, pools. Every label is an HTML-like label, XML-escaped here
(host names the planner accepts, such as ``<script>...``, stay text); every other value is a
quoted DOT string. Node and cluster ids are the model's (``s3``, ``cluster_g1``), never a host
name. Each node, cluster and edge carries an ``id`` and a ``class`` dot copies into the SVG.
"""

from __future__ import annotations

import html

FONT = "Helvetica,Arial,sans-serif"
KV_COLOR = "#c62828"
# (fill, border) per style of report/_topology.py (STYLE_KEYS); the front doors share one.
STYLES = {
    "front": ("#cfe3ff", "#2f5f9e"),
    "metaservice": ("#fff2b3", "#9a7b00"),
    "prefill": ("#ffd9b3", "#b35c00"),
    "decode": ("#c9efc9", "#2e7d32"),
    "engine": ("#e3d4f7", "#5e35b1"),
    "other": ("#e8e8e8", "#555555"),
}


def _label(text):
    """Text for a Graphviz HTML-like label: XML-escaped."""
    return html.escape(str(text), quote=True)


def _attrs(**attrs):
    return ", ".join("%s=%s" % (k, v) for k, v in attrs.items() if v is not None)


def _q(text):
    """A double-quoted DOT string."""
    return '"%s"' % str(text).replace("\\", "\\\\").replace('"', '\\"')


def _html_label(lines):
    """``<...>``: the first line bold, the others smaller."""
    rows = ["<B>%s</B>" % _label(lines[0])] + ['<FONT POINT-SIZE="10">%s</FONT>' % _label(x) for x in lines[1:]]
    return "<%s>" % "<BR/>".join(rows)


EDGE_STYLES = {
    "client": {"penwidth": "1.6", "style": _q("bold")},
    "door": {"penwidth": "1.6", "style": _q("bold")},
    "route": {"penwidth": "1.3"},
    "kv": {"penwidth": "2.4", "color": _q(KV_COLOR), "fontcolor": _q(KV_COLOR)},
    "join": {"style": _q("dashed"), "dir": "back", "arrowtail": "normal"},
    "after": {"style": _q("dotted"), "dir": "back", "arrowtail": "normal"},
}


def topology_dot(model):
    """Graphviz source of a ``topology`` model (left to right: clients, front doors, pools)."""
    return _Dot(model).source()


def _header():
    return [
        "digraph kimi_k3 {",
        "  graph [%s];"
        % _attrs(
            rankdir="LR",
            compound="true",
            newrank="true",
            nodesep="0.25",
            ranksep="0.55",
            fontname=_q(FONT),
            fontsize="12",
            bgcolor=_q("white"),
            pad="0.2",
        ),
        # A wider margin than dot's: a browser's font may set the text a little wider than dot measured.
        "  node [%s];"
        % _attrs(shape="box", style=_q("rounded,filled"), fontname=_q(FONT), fontsize="12", margin=_q("0.2,0.06")),
        "  edge [%s];" % _attrs(fontname=_q(FONT), fontsize="10", color=_q("#444444"), fontcolor=_q("#333333")),
    ]


def _clients_line():
    return "  clients [%s];" % _attrs(
        label="<<B>clients</B>>",
        shape="oval",
        style=_q("filled"),
        fillcolor=_q("#ffffff"),
        color=_q("#333333"),
        id=_q("clients"),
        **{"class": _q("clients")},
    )


def _edge_line(index, edge):
    label = "<B>%s</B>" % _label(edge["label"]) if edge["kind"] == "kv" else _label(edge["label"])
    return "  %s -> %s [%s];" % (
        edge["tail"],
        edge["head"],
        _attrs(
            label="<%s>" % label if edge["label"] else None,
            ltail=edge["ltail"],
            lhead=edge["lhead"],
            minlen=edge.get("minlen"),
            id=_q("edge-%s-%d" % (edge["kind"], index)),
            **{"class": _q("edge-%s" % edge["kind"])},
            **EDGE_STYLES[edge["kind"]],
        ),
    )


class _Dot:
    """One ``topology_dot`` call: the model's clusters as a tree, each with its own nodes."""

    def __init__(self, model):
        self.model = model
        # A node 0 with followers keeps their order (``ordering=out``): node 1 first.
        self.roots = {e["tail"] for e in model["edges"] if e["kind"] == "join"}
        self.children = {}
        for cluster in model["clusters"]:
            self.children.setdefault(cluster["parent"], []).append(cluster)
        self.nodes_of = {}
        for node in model["nodes"]:
            self.nodes_of.setdefault(node["cluster"], []).append(node)

    def source(self):
        out = _header()
        if self.model.get("clients"):
            out.append(_clients_line())
        out += [self.node_line(node, "  ") for node in self.nodes_of.get(None, [])]
        for cluster in self.children.get(None, []):
            out += self.cluster_lines(cluster, 1)
        out += [_edge_line(index, edge) for index, edge in enumerate(self.model["edges"])]
        out.append("}")
        return "\n".join(out) + "\n"

    def node_line(self, node, indent):
        fill, border = STYLES[node["style"]]
        follower = "follower" in " ".join(node["lines"])
        return "%s%s [%s];" % (
            indent,
            node["id"],
            _attrs(
                label=_html_label([node["service"] or node["host"], *node["lines"]]),
                fillcolor=_q(fill),
                color=_q(border),
                style=_q("rounded,filled,dashed" if follower else "rounded,filled"),
                ordering=_q("out") if node["id"] in self.roots else None,
                id=_q("svc-%s" % node["id"]),
                **{"class": _q("service style-%s" % node["style"])},
            ),
        )

    def cluster_lines(self, cluster, depth):
        """``subgraph cluster_...``: its own nodes, then the clusters inside it."""
        indent = "  " * depth
        _fill, border = STYLES.get(cluster["role"], STYLES["other"])
        pool = cluster["kind"] == "pool"
        attrs = _attrs(
            label=_html_label(cluster["label"]),
            style=_q("rounded" if pool else "rounded,dashed"),
            color=_q(border),
            bgcolor=_q("#fbfbfb" if pool else "#ffffff"),
            labeljust=_q("l"),
            id=_q(cluster["id"]),
            **{"class": _q("%s role-%s" % (cluster["kind"], cluster["role"]))},
        )
        out = ["%ssubgraph %s {" % (indent, cluster["id"]), "%s  graph [%s];" % (indent, attrs)]
        out += [self.node_line(node, indent + "  ") for node in self.nodes_of.get(cluster["id"], [])]
        for child in self.children.get(cluster["id"], []):
            out += self.cluster_lines(child, depth + 1)
        out.append("%s}" % indent)
        return out
