"""kimi_k3.serving.model_fetch run as the model_weights role runs it on a seed: through Ansible (ad
hoc, on the controller), under .venv/services' Python, which has the hubs' clients."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess

from conftest import ROOT, VENV_BIN, nginx_program

from helpers.ansible_run import run
from helpers.listening import free_port, wait_listening

SERVICES = ROOT / ".venv" / "services" / "bin"


def model_fetch(args, check=True):
    """The module with ``args`` (its options), its one-line output captured."""
    return run(
        VENV_BIN / "ansible",
        "localhost",
        "-m",
        "kimi_k3.serving.model_fetch",
        "-a",
        json.dumps(args),
        "-e",
        "ansible_python_interpreter=%s" % (SERVICES / "python"),
        "-o",
        check=check,
        timeout=300,
    )


def result(proc):
    """The module's result in a one-line output."""
    return json.loads(proc.stdout.split("=>", 1)[1])


@contextlib.contextmanager
def token_gate(folder, token, inner):
    """Debian's nginx on a free port of the loopback that answers only requests carrying ``token`` as
    a bearer token, and refuses the others as the Hugging Face Hub refuses a bad token (HTTP 401 with
    X-Error-Message "Invalid credentials in Authorization header", the header huggingface_hub reads).
    ``inner``: what the allowed requests get (``root ...;`` serves a folder, ``proxy_pass ...;`` a
    server). Yields its address."""
    port = free_port()
    temp = folder / "nginx"
    temp.mkdir(parents=True, exist_ok=True)
    config = temp / "nginx.conf"
    config.write_text(
        "daemon off;\npid %(t)s/nginx.pid;\nerror_log stderr;\n%(user)s\nevents {}\nhttp {\n"
        "  access_log off;\n  client_body_temp_path %(t)s/body;\n  proxy_temp_path %(t)s/proxy;\n"
        "  fastcgi_temp_path %(t)s/fastcgi;\n  uwsgi_temp_path %(t)s/uwsgi;\n  scgi_temp_path %(t)s/scgi;\n"
        "  server {\n    listen 127.0.0.1:%(port)d;\n    location / {\n"
        '      if ($http_authorization != "Bearer %(token)s") {\n'
        '        add_header X-Error-Message "Invalid credentials in Authorization header" always;\n'
        "        return 401;\n      }\n      %(inner)s\n    }\n  }\n}\n"
        % {
            "t": temp,
            "user": "user root;" if os.geteuid() == 0 else "",
            "port": port,
            "token": token,
            "inner": inner,
        }
    )
    proc = subprocess.Popen([str(nginx_program()), "-c", str(config)], stderr=subprocess.PIPE, text=True)
    wait_listening(port, proc, "nginx")
    try:
        yield "http://127.0.0.1:%d" % port
    finally:
        proc.terminate()
        proc.wait(timeout=30)
