"""Stands in for the get-pip script ansible-test downloads from ci-files.testing.ansible.com, which
this network cannot reach: pip from the interpreter's own ensurepip, then `pip install` of what
ansible-test asked for (its options and packages, from the package index the machine reaches).
tools/ansible_test.sh puts it where ansible-test looks for a downloaded copy."""

import ensurepip
import os
import subprocess
import sys

CA_FILE = "/etc/ssl/certs/ca-certificates.crt"
ensurepip.bootstrap(upgrade=True)
args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
# ansible-test runs this with an environment of its own, without the machine's pip settings.
if os.path.exists(CA_FILE):
    args = ["--cert", CA_FILE, *args]
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install", *args]))
