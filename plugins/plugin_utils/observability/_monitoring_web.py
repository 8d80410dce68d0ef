# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""Prometheus' and Alertmanager's web configuration (``--web.config.file``): basic auth and TLS.

Both read the same file format (the Prometheus exporter-toolkit's): ``basic_auth_users`` maps a
user to a bcrypt hash, ``tls_server_config`` names the certificate and key. The hash is made on
the controller from ``k3_monitoring_password`` with a salt derived from the password and the user
(HMAC-SHA256), so the same password gives the same file and a re-run changes nothing; a new
password gives a new salt. Cost 10: every request is checked against it (the toolkit caches
successes).
"""

from __future__ import annotations

import base64
import hashlib
import hmac

BCRYPT_COST = 10
_STANDARD = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_BCRYPT = b"./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


# TLS 1.2's suites with forward secrecy and AEAD only, by Go's names (the exporter-toolkit's
# cipher_suites; TLS 1.3 picks its own, all AEAD): the front door's list. Without it Go also offers
# CBC suites with SHA-1.
CIPHER_SUITES = (
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
)


class WebConfigError(ValueError):
    """A password or a TLS pair the web configuration cannot be made from."""


def password_hash(password, user):
    """The bcrypt hash of ``password`` with its salt derived from it and ``user``."""
    import bcrypt  # the controller's (requirements.txt, the execution environment)

    if not isinstance(password, str) or not password:
        raise WebConfigError("k3_monitoring_password must be one password (a text), not %s" % type(password).__name__)
    secret = password.encode()
    if len(secret) > 72:
        raise WebConfigError("k3_monitoring_password is longer than bcrypt's 72 bytes")
    raw = hmac.new(secret, ("kimi_k3.serving monitoring " + user).encode(), hashlib.sha256).digest()[:16]
    salt = base64.b64encode(raw)[:22].translate(bytes.maketrans(_STANDARD, _BCRYPT))
    return bcrypt.hashpw(secret, b"$2b$%02d$" % BCRYPT_COST + salt).decode()


def web_config(user, password, cert=None, key=None):
    """The ``--web.config.file`` document: ``user``'s hash, and TLS when a certificate is given."""
    if bool(cert) != bool(key):
        raise WebConfigError("TLS needs a certificate and its key (monitoring_web_tls_cert, monitoring_web_tls_key)")
    config = {"basic_auth_users": {user: password_hash(password, user)}}
    if cert:
        config["tls_server_config"] = {
            "cert_file": cert,
            "key_file": key,
            "min_version": "TLS12",
            "cipher_suites": list(CIPHER_SUITES),
        }
    return config


def alertmanager_client(user, password_file, ca_file=None, tls=False):
    """How Prometheus reaches an Alertmanager behind the same credentials (an alertmanager_config)."""
    client = {"basic_auth": {"username": user, "password_file": password_file}}
    if tls:
        client["scheme"] = "https"
        if ca_file:
            client["tls_config"] = {"ca_file": ca_file}
    return client
