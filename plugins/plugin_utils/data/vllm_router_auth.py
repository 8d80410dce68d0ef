"""vllm-router with inbound API keys, no key in argv (kimi_k3.serving writes this file).

vllm-router checks a client's bearer token by a GET to each validation URL with the token
(HTTP 200: valid; every result is cached), on every route, /health included. Its launcher
has no flag for the URLs, and its --api-key (the key sent to the engines) would put a key in
argv. This launcher takes both from the environment (the unit's 0600 environment file) and
answers the validation itself, from the listed keys, in a child process on the loopback (the
router's start() keeps Python's lock, so a thread of this process would never answer):

  K3_API_KEYS     the keys clients may use, comma-separated (removed from the environment)
  OPENAI_API_KEY  the key sent to the engines (vllm-router reads it for P/D requests)

Every argument is vllm-router's own, parsed by vllm-router.
"""

import ctypes
import hmac
import http.server
import os
import signal
import sys


def key_check(keys):
    """A child process serving on a free loopback port: 200 for a known bearer token, 401 otherwise.

    The child ends with this process (PR_SET_PDEATHSIG); returns the validation URL."""
    expected = [("Bearer " + k).encode() for k in keys]

    class Check(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (the handler's name is http.server's)
            given = (self.headers.get("Authorization") or "").encode()
            ok = False
            for token in expected:
                ok |= hmac.compare_digest(given, token)
            self.send_response(200 if ok else 401)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Check)
    parent = os.getpid()
    if os.fork() == 0:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:
            os._exit(0)
        try:
            server.serve_forever()
        finally:
            os._exit(0)
    url = "http://127.0.0.1:%d/" % server.server_address[1]
    server.socket.close()
    return url


def main():
    # vllm-router's own modules: there only in the router host's environment, where this runs.
    from vllm_router.launch_router import parse_router_args  # noqa: PLC0415
    from vllm_router.router import Router  # noqa: PLC0415

    keys = [k for k in os.environ.pop("K3_API_KEYS", "").split(",") if k]
    if not keys:
        sys.exit("vllm-router-auth: K3_API_KEYS is empty: the environment file lists no key")
    args = parse_router_args(sys.argv[1:])
    args.api_key_validation_urls = [key_check(keys)]
    args.api_key = args.api_key or os.environ.get("OPENAI_API_KEY")
    Router.from_args(args).start()


if __name__ == "__main__":
    main()
