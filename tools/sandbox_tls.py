# Copyright: kimi_k3.serving contributors
# Apache License 2.0
"""The sandbox's TLS: a CA of its own and the front door's certificate, made once and kept.

    .venv/ansible/bin/python tools/sandbox_tls.py DIR SUBNET [SUBNET...]

Writes DIR/ca.pem and, for each service that presents TLS, a certificate and key of its own:
DIR/front-door.pem and .key, DIR/monitoring.pem and .key (Prometheus and Alertmanager). Each is
valid for every host address of each SUBNET, so one certificate serves any sandbox host set, on
any of their networks, with the key identifiers and key usage that strict X.509 verification asks
for. The keys are 0600 in a 0700 folder; the CA's key is kept beside DIR, in DIR-ca, never in DIR,
which is mounted into every host. A second run keeps what is there while it
is valid for another 30 days and covers every SUBNET, so a re-run of site.yml changes nothing.
tools/sandbox.sh up runs it and mounts DIR read-only into every host at the same path;
inventories/sandbox*/group_vars point k3_tls_cert, k3_tls_key and k3_tls_ca at it.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import sys

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

DAYS = 365
RENEW_DAYS = 30


def _write(path, data, mode):
    fd = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.chmod(path + ".tmp", mode)
    os.replace(path + ".tmp", path)


def _key_bytes(key):
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


# Each service that presents TLS has a certificate and key of its own: a leaked key is one service's.
# Each with what it presents it for: Alertmanagers that peer (two monitoring hosts) dial each other
# with the monitoring one too.
LEAVES = {
    "front-door": ("front door", [ExtendedKeyUsageOID.SERVER_AUTH]),
    "monitoring": ("Prometheus and Alertmanager", [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
}


def ca_folder(folder):
    """Where the CA's private key is kept: beside DIR, never in it (DIR is mounted into every host)."""
    return folder.rstrip("/") + "-ca"


def _still_good(folder, addresses):
    for name in LEAVES:
        try:
            with open(os.path.join(folder, name + ".pem"), "rb") as handle:
                cert = x509.load_pem_x509_certificate(handle.read())
        except (OSError, ValueError):
            return False
        if not os.path.exists(os.path.join(folder, name + ".key")):
            return False
        try:  # made before the certificates carried key identifiers (strict X.509 clients need them)
            cert.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier)
            usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        except x509.ExtensionNotFound:
            return False
        if list(usages) != LEAVES[name][1]:  # made before the monitoring certificate served peers too
            return False
        left = cert.not_valid_after_utc - datetime.datetime.now(datetime.UTC)
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        if left <= datetime.timedelta(days=RENEW_DAYS) or not set(addresses) <= set(
            names.get_values_for_type(x509.IPAddress)
        ):
            return False
    return os.path.exists(os.path.join(folder, "ca.pem"))


def _leaf(title, usages, addresses, ca_name, ca_key, now):
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kimi_k3.serving sandbox %s" % title)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=DAYS))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(a) for a in addresses]), critical=False)
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        # digitalSignature only: an EC key signs the handshake and encrypts no key.
        .add_extension(x509.KeyUsage(True, False, False, False, False, False, False, False, False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return key, cert


def make(folder, *subnets):
    addresses = [a for subnet in subnets for a in ipaddress.ip_network(subnet).hosts()]
    for where in (folder, ca_folder(folder)):
        os.makedirs(where, mode=0o700, exist_ok=True)
        os.chmod(where, 0o700)
    stale = os.path.join(folder, "ca.key")  # where an earlier version kept it
    if os.path.exists(stale):
        os.replace(stale, os.path.join(ca_folder(folder), "ca.key"))
    if _still_good(folder, addresses):
        return "kept"
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kimi_k3.serving sandbox CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    _write(os.path.join(ca_folder(folder), "ca.key"), _key_bytes(ca_key), 0o600)
    _write(os.path.join(folder, "ca.pem"), ca.public_bytes(serialization.Encoding.PEM), 0o644)
    for name, (title, usages) in LEAVES.items():
        key, cert = _leaf(title, usages, addresses, ca_name, ca_key, now)
        _write(os.path.join(folder, name + ".key"), _key_bytes(key), 0o600)
        _write(os.path.join(folder, name + ".pem"), cert.public_bytes(serialization.Encoding.PEM), 0o644)
    return "made"


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: sandbox_tls.py DIR SUBNET [SUBNET...]")
    print("tls: %s %s" % (make(sys.argv[1], *sys.argv[2:]), sys.argv[1]))


if __name__ == "__main__":
    main()
