# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Alertmanager's cluster: the monitoring hosts' Alertmanagers as one, over mutual TLS, or none.

Two or more monitoring hosts (plan ``monitoring.hosts``) with TLS and a CA (``k3_tls_cert``,
``k3_tls_key``, ``k3_tls_ca``): each Alertmanager gossips with the others on its own address
(``--cluster.listen-address``, port 9094) over TLS (``--cluster.tls-config``) that demands a
client certificate signed by that CA, so only a peer holding such a key joins, and silences and
notifications are shared: an alert is notified once. The firewall opens the port to the other
monitoring hosts only. Otherwise (one monitoring host, or no TLS) there is no cluster listener at
all: the gossip port without TLS (TCP and UDP, every address, no authentication) would let anyone
who reaches it join and spread silences past the web password.
"""

from __future__ import annotations

from ansible_collections.kimi_k3.serving.plugins.plugin_utils.observability import _monitoring_web as web

PORT = 9094
API_PORT = 9093


def peering(plan, host, tls_ready):
    """``{"address", "peers"}`` of ``host``'s Alertmanager in its cluster, or None where it stands
    alone (fewer than two monitoring hosts, ``host`` not one of them, or no TLS with a CA)."""
    members = (plan.get("monitoring") or {}).get("hosts") or []
    own = [m for m in members if m.get("host") == host]
    if len(members) < 2 or not own or not tls_ready:
        return None
    return {
        "address": own[0]["ip"],
        "peers": [m["ip"] for m in members if m.get("host") != host],
    }


def _endpoint(address, port=PORT):
    return "[%s]:%d" % (address, port) if ":" in str(address) else "%s:%d" % (address, port)


def cluster_flags(cluster, tls_file, port=PORT):
    """Alertmanager's ``--cluster.*`` flags: its own address and its peers', or no listener."""
    if cluster is None:
        return ["--cluster.listen-address="]
    own = _endpoint(cluster["address"], port)
    return [
        "--cluster.listen-address=%s" % own,
        "--cluster.advertise-address=%s" % own,
        *["--cluster.peer=%s" % _endpoint(peer, port) for peer in cluster["peers"]],
        "--cluster.tls-config=%s" % tls_file,
    ]


def api_addresses(cluster):
    """The peers' Alertmanager API addresses, where Prometheus sends every alert too."""
    return [_endpoint(peer, API_PORT) for peer in (cluster or {}).get("peers") or []]


def cluster_tls(cert, key, ca):
    """The ``--cluster.tls-config`` document: mutual TLS with the monitoring certificate, both ways.

    The certificate must allow client authentication too (extended key usage ``clientAuth``): each
    peer presents it when it dials the others.
    """
    return {
        "tls_server_config": {
            "cert_file": cert,
            "key_file": key,
            "client_auth_type": "RequireAndVerifyClientCert",
            "client_ca_file": ca,
            "min_version": "TLS12",
            "cipher_suites": list(web.CIPHER_SUITES),
        },
        "tls_client_config": {"cert_file": cert, "key_file": key, "ca_file": ca, "min_version": "TLS12"},
    }
