# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""What an Atlas 800 A3/A2 host needs before the engines start, decided from its facts and the plan.

Plain Python (no Ansible imports), unit-tested directly; the ``ascend_prerequisites`` and
``hccn_addresses`` filters hand it to the ``ascend`` role.
"""

from __future__ import annotations

import re

from ansible_collections.kimi_k3.serving.plugins.module_utils.fabric_hccn import parse_ip as parse_hccn_ip

# The tutorial's image per host operating system (ansible_facts.distribution, lower case).
OS_NAMES = {"ubuntu": "ubuntu", "openeuler": "openeuler"}


def ascend_version_key(text):
    """Sortable key of an Ascend/CANN version: ``24.1.rc2.2`` < ``24.1.0`` < ``25.2.1``; ``8.2.RC1`` < ``8.2.0``.

    A release-candidate or test part (``rc2``, ``T63``) sorts before any release number at its place.
    """
    if not text:
        return None
    key = []
    for part in re.split(r"[.\-]", str(text).strip().lower()):
        match = re.fullmatch(r"(\d+)|(rc|t|beta|alpha)(\d*)", part)
        if not match:
            return None
        if match.group(1) is not None:
            key.append((1, int(match.group(1))))
        else:
            key.append((0, int(match.group(3) or 0)))
    return tuple(key)


def hccn_addresses(outputs):
    """Device id -> ``hccn_tool -i N -ip -g`` output, to device id -> address (or None)."""
    return {int(dev): parse_hccn_ip(text).get("ipaddr") for dev, text in (outputs or {}).items()}


def duplicate_hccn_addresses(by_host):
    """``{host: {device: address}}`` -> one message per address used by more than one device."""
    seen = {}
    for host in sorted(by_host):
        for dev, addr in sorted((by_host[host] or {}).items()):
            if addr:
                seen.setdefault(addr, []).append("%s device %s" % (host, dev))
    return [
        "%s: NPU network address %s is used by %s. Fix: give every NPU its own address (hccn_tool -i N -ip -s)."
        % (users[0].split(" ")[0], addr, " and ".join(users))
        for addr, users in sorted(seen.items())
        if len(users) > 1
    ]


def ascend_prerequisites(
    facts, services, parameters=None, host="this host", distribution=None, paths=None, *, hccn=None, table=None
):
    """Decide what the ``ascend`` role checks on one host.

    ``facts``: ``k3_accelerator``; ``services``: the host's planned services; ``parameters``: the plan's
    (``devices_per_node``, ``host_os``, ``images``); ``distribution``: ``ansible_facts.distribution``;
    ``paths``: each device and mount source of the planned ``docker run`` to its ``stat`` result (or a bool);
    ``hccn``: device id -> NPU network address from hccn_tool (None when it printed none);
    ``table``: minimum versions, ``{"min_driver", "min_firmware", "min_cann"}`` (null skips one).

    Returns ``problems``, each naming the host, what is wrong and the fix.
    """
    facts = facts or {}
    parameters = parameters or {}
    table = table or {}
    problems = []
    want = int(parameters.get("devices_per_node") or 0)
    count = int(facts.get("device_count") or 0)

    if facts.get("vendor") != "ascend":
        problems.append(
            "%s: no Ascend NPU found (npu-smi info; /usr/local/Ascend/driver/version.info). Fix: install the "
            "Ascend driver and firmware." % host
        )
    elif want and count != want:
        problems.append(
            "%s: npu-smi lists %d NPU devices, the profile runs %d per node (%s). Fix: check the driver and the "
            "hardware (npu-smi info), or use the profile for this machine."
            % (host, count, want, "Atlas 800 A3: 16 dies" if want == 16 else "Atlas 800 A2: 8 NPUs")
        )

    host_runtime = any(s.get("runtime") == "host" for s in services if s.get("kind") == "vllm")
    checks = [("min_driver", "driver_version", "driver"), ("min_firmware", "firmware_version", "firmware")]
    if host_runtime:
        checks.append(("min_cann", "cann_version", "CANN toolkit"))
    for key, fact, label in checks:
        need, have = table.get(key), facts.get(fact)
        if not need or facts.get("vendor") != "ascend":
            continue
        if ascend_version_key(have) is None:
            problems.append(
                "%s: the Ascend %s version could not be read. Fix: install %s %s or newer." % (host, label, label, need)
            )
        elif ascend_version_key(have) < ascend_version_key(need):
            problems.append(
                "%s: Ascend %s %s is installed; %s or newer is required. Fix: upgrade the %s."
                % (host, label, have, need, label)
            )

    planned_os = str(parameters.get("host_os") or "")
    actual_os = OS_NAMES.get(str(distribution or "").lower())
    if planned_os and actual_os and actual_os != planned_os:
        images = parameters.get("images") or {}
        problems.append(
            "%s: the host runs %s but the plan uses the %s image %s. Fix: set k3_host_os: %s (image %s)."
            % (host, distribution, planned_os, images.get(planned_os, "?"), actual_os, images.get(actual_os, "?"))
        )

    for path, state in sorted((paths or {}).items()):
        ok = bool(state.get("exists")) if isinstance(state, dict) else bool(state)
        if not ok:
            problems.append(
                "%s: %s is missing: the spec's docker run mounts it into the engine container. Fix: install the "
                "Ascend driver (and its tools) so that %s exists." % (host, path, path)
            )

    if hccn is not None and facts.get("vendor") == "ascend":
        missing = sorted(dev for dev, addr in hccn.items() if not addr)
        if len(hccn) < count:
            missing = sorted(set(missing) | set(range(len(hccn), count)))
        if missing:
            problems.append(
                "%s: NPU device(s) %s have no network address (hccn_tool -i N -ip -g): multi-node HCCL cannot reach "
                "them. Fix: configure them (hccn_tool -i N -ip -s address A netmask M) as the tutorial's multi-node "
                "communication check describes." % (host, ", ".join(str(d) for d in missing))
            )
    return {"problems": problems, "host_runtime": host_runtime}
