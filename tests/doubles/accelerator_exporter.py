#!/usr/bin/env python3
"""TEST DOUBLE of an accelerator exporter: serves a recorded real metrics page, with values that flip.

The sandbox has no GPU or NPU, so no vendor exporter can run there. This stand-in serves a page
recorded from a real exporter (tests/unit/fixtures/exporters/, sources in their SOURCES.md) on
``/metrics``, so that Prometheus scrapes the real metric names and labels and the hardware alerts
run on them. It is labelled a double everywhere it appears (the sandbox inventory, the docs).

- The recorded samples' timestamps are dropped (Prometheus would refuse samples from years ago).
- ``--set NAME=VALUE``: every series of NAME gets VALUE (the stand-in's healthy baseline, e.g. the
  link and network status of a chip whose recorded page has no network).
- ``--overrides FILE``: read on every scrape; each line ``NAME LABEL=VALUE NUMBER`` gives the series
  of NAME with that label the number (``npu_chip_info_health_status id=0 0``: chip 0 unhealthy).
  A test writes it to make a device fail, and removes it to make it recover.

    accelerator_exporter.py --page PAGE --listen IP:PORT [--set NAME=VALUE ...] [--overrides FILE]
"""

from __future__ import annotations

import argparse
import re
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

SAMPLE = re.compile(r"^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?P<labels>\{[^}]*\})?\s+(?P<value>\S+)(\s+\S+)?$")


def read_overrides(path):
    """[(name, label, label value, number)] from the overrides file (none when it is missing)."""
    if not path:
        return []
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        return []
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and "=" in parts[1]:
            label, value = parts[1].split("=", 1)
            out.append((parts[0], label, value, parts[2]))
    return out


def render(page, baseline, overrides):
    """The page with its timestamps dropped, the baseline and then the overrides applied."""
    lines = []
    for line in page.splitlines():
        match = SAMPLE.match(line) if line and not line.startswith("#") else None
        if not match:
            lines.append(line)
            continue
        name, labels, value = match.group("name"), match.group("labels") or "", match.group("value")
        value = baseline.get(name, value)
        for o_name, label, label_value, number in overrides:
            if o_name == name and '%s="%s"' % (label, label_value) in labels:
                value = number
        lines.append("%s%s %s" % (name, labels, value))
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--page", required=True, help="a recorded metrics page")
    parser.add_argument("--listen", required=True, help="IP:PORT")
    parser.add_argument("--set", action="append", default=[], help="NAME=VALUE for every series of NAME")
    parser.add_argument("--overrides", help="a file of NAME LABEL=VALUE NUMBER lines, read on every scrape")
    args = parser.parse_args()
    page = Path(args.page).read_text()
    baseline = dict(item.split("=", 1) for item in args.set)
    host, port = args.listen.rsplit(":", 1)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            if self.path.split("?", 1)[0] != "/metrics":
                self.send_error(404)
                return
            body = render(page, baseline, read_overrides(args.overrides)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args):
            pass

    ThreadingHTTPServer((host, int(port)), Handler).serve_forever()


if __name__ == "__main__":
    main()
