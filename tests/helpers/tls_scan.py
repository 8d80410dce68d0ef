"""sslyze (.venv/scan) against one TLS port, as an outside tester scans it: every protocol version,
every cipher suite, and the certificate chain validated against a CA under sslyze's checks
(cryptography's X.509 verifier: RFC 5280 strict, key identifiers included)."""

from __future__ import annotations

import json
import subprocess

from conftest import ROOT

SSLYZE = ROOT / ".venv" / "scan" / "bin" / "python"
PROTOCOLS = ("ssl_2_0", "ssl_3_0", "tls_1_0", "tls_1_1", "tls_1_2", "tls_1_3")


def _aead(name):
    return any(mark in name for mark in ("_GCM_", "_CHACHA20_POLY1305_", "_CCM"))


def scan(address, ca_file, folder):
    """``{"accepted": {protocol: [suites]}, "weak": [(protocol, suite)], "chain": [problems]}``
    for ``address`` (host:port), its chain checked against ``ca_file``."""
    out = folder / ("sslyze-%s.json" % address.replace(":", "-"))
    commands = ["--sslv2", "--sslv3", "--tlsv1", "--tlsv1_1", "--tlsv1_2", "--tlsv1_3"]
    subprocess.run(
        [str(SSLYZE), "-m", "sslyze", *commands, "--certinfo", "--certinfo_ca_file", str(ca_file)]
        + ["--json_out", str(out), "--quiet", address],
        check=True,
        timeout=300,
    )
    (result,) = json.loads(out.read_text())["server_scan_results"]
    assert result["scan_status"] == "COMPLETED", result.get("connectivity_error_trace")
    found = result["scan_result"]
    accepted = {}
    for protocol in PROTOCOLS:
        attempt = found["%s_cipher_suites" % protocol]
        assert attempt["status"] == "COMPLETED", (protocol, attempt.get("error_trace"))
        accepted[protocol] = [s["cipher_suite"]["name"] for s in attempt["result"]["accepted_cipher_suites"]]
    weak = [(p, s) for p in PROTOCOLS for s in accepted[p] if p not in ("tls_1_2", "tls_1_3") or not _aead(s)]
    chain = []
    for deployment in found["certificate_info"]["result"]["certificate_deployments"]:
        custom = [r for r in deployment["path_validation_results"] if r["trust_store"]["path"] == str(ca_file)]
        chain += [
            r.get("validation_error") or "not validated" for r in custom if not r.get("was_validation_successful")
        ]
        if not custom:
            chain.append("no validation against %s" % ca_file)
    return {"accepted": accepted, "weak": weak, "chain": chain}
