# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Ascend NPU network ports in the fabric check: what ``hccn_tool`` prints.

Pure functions, no I/O: the module runs ``hccn_tool -i N ...`` and hands its output here. Each cause
names what failed plainly; the caller adds the host or the pair.

* ``hccn_tool -i N -link -g``: one line, ``link status: UP`` (``DOWN`` when the port is down).
* ``hccn_tool -i N -net_health -g``: one line, ``net health status: <state>``. The state may be several
  words (``Socket failed``), so it is everything after the colon, as Huawei's own parser reads it.
  ``Success`` is the only healthy one; ``Init`` means the port was never probed (no ``netdetect``
  address is set), ``Fault`` follows a link going down.
* ``hccn_tool -i N -ping -g address IP``: a block per device::

      device 3 PING 29.1.137.205
      recv seq=0,time=1.418000ms
      3 packets transmitted, 3 received, 0.00% packet loss

  with no blank line and no rtt summary; a shell loop over the devices prints the blocks back to
  back, so the text is split at each ``device N PING`` line.
"""

from __future__ import annotations

import re

_LINK = re.compile(r"^\s*link status\s*:\s*(?P<status>\S+)", re.MULTILINE)
_HEALTH = re.compile(r"^\s*net health status\s*:\s*(?P<status>.*?)\s*$", re.MULTILINE)
_PING = re.compile(r"^\s*device\s+(?P<device>\d+)\s+PING\s+(?P<address>\S+)")
_REPLY = re.compile(r"\btime\s*=\s*(?P<ms>\d+(?:\.\d*)?)\s*ms\b")
_SUMMARY = re.compile(
    r"(?P<transmitted>\d+)\s+packets transmitted,\s*(?P<received>\d+)\s+received,\s*"
    r"(?P<loss>\d+(?:\.\d*)?)%\s*packet loss"
)
_HEALTH_HINTS = {
    "Init": " (the port was never probed: no netdetect address is set)",
}


def parse_link(text: str | None) -> dict:
    """``hccn_tool -i N -link -g`` -> ``{status, failed, cause}``: failed unless the status is ``UP``."""
    match = _LINK.search(text or "")
    status = match.group("status") if match else None
    if status is None:
        cause = "no 'link status:' line in the output"
    else:
        cause = None if status == "UP" else "link status is %s" % status
    return {"status": status, "failed": cause is not None, "cause": cause}


def parse_net_health(text: str | None) -> dict:
    """``hccn_tool -i N -net_health -g`` -> ``{status, failed, cause}``: failed unless the status is
    ``Success``; the status is everything after ``net health status:``."""
    match = _HEALTH.search(text or "")
    status = match.group("status") if match and match.group("status") else None
    if status is None:
        cause = "no 'net health status:' line in the output"
    else:
        cause = None if status == "Success" else "net health status is %s%s" % (status, _HEALTH_HINTS.get(status, ""))
    return {"status": status, "failed": cause is not None, "cause": cause}


def parse_ping(text: str | None) -> list[dict]:
    """``hccn_tool -i N -ping -g address IP`` (one device or a loop over several) -> one entry per
    ``device N PING IP`` block: ``{device, address, transmitted, received, loss_percent, times_ms,
    failed, cause}``. Failed when a packet got no reply or the block has no summary line. An empty
    list: no ping block at all."""
    return [_ping_block(head, body) for head, body in _blocks(text)]


def _blocks(text):
    """``[(match of the device N PING line, [the lines after it up to the next one])]``."""
    blocks = []
    for line in (text or "").splitlines():
        head = _PING.match(line)
        if head:
            blocks.append((head, []))
        elif blocks and line.strip():
            blocks[-1][1].append(line.strip())
    return blocks


def _ping_block(head, body):
    """One device's ping: its replies' times and the summary line's counts."""
    summary = next((m for m in (_SUMMARY.search(line) for line in body) if m), None)
    entry = {
        "device": int(head.group("device")),
        "address": head.group("address"),
        "transmitted": int(summary.group("transmitted")) if summary else None,
        "received": int(summary.group("received")) if summary else None,
        "loss_percent": float(summary.group("loss")) if summary else None,
        "times_ms": [float(m.group("ms")) for m in (_REPLY.search(line) for line in body) if m],
    }
    cause = _ping_cause(entry, body)
    entry.update(failed=cause is not None, cause=cause)
    return entry


def _ping_cause(entry, body):
    """``device 0: 0 of 3 packets to 11.12.165.80 answered (100.00% loss)``, or None when all were."""
    if entry["transmitted"] is None:
        others = [line for line in body if not _REPLY.search(line)]
        tail = ": %s" % others[0] if others else ""
        return "device %d: no ping summary for %s%s" % (entry["device"], entry["address"], tail)
    if entry["transmitted"] == 0:
        return "device %d: no packet was sent to %s" % (entry["device"], entry["address"])
    if entry["received"] < entry["transmitted"]:
        return "device %d: %d of %d packets to %s answered (%.2f%% loss)" % (
            entry["device"],
            entry["received"],
            entry["transmitted"],
            entry["address"],
            entry["loss_percent"],
        )
    return None


def parse_ip(text: str | None) -> dict:
    """``hccn_tool -i N -ip -g`` -> ``{"ipaddr": ..., "netmask": ...}`` (keys absent when not printed)."""
    out = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() in ("ipaddr", "netmask") and value.strip():
            out[key.strip()] = value.strip()
    return out


def parse_address(text: str | None) -> dict:
    """``hccn_tool -i N -ip -g`` -> ``{address, failed, cause}``, the fabric check's form."""
    address = parse_ip(text).get("ipaddr")
    return {"address": address, "failed": address is None, "cause": None if address else "no ipaddr in its output"}
