"""Scaffolding of the py.* tests: the only file that knows where the shared helpers live.

The tests drive the brokerclient package (from python/, via PYTHONPATH or the path set
here) against real broker-node processes started by tests/web_socket/lib/wsnode.py. What
this adds on top of wsnode: a node that can be restarted on the same WebSocket port, the
test PKI, skipping (exit 77), and running blocking client code off the event loop.

    async def main(binary):
        with Node(binary) as node:
            sub = await blocking(brokerclient.connect, node.url(), ["/t"])
            ...
    run(main, limit=60)
"""

import asyncio
import functools
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PYTHON_PACKAGE = os.path.join(ROOT, "python")
CERTS = os.path.join(ROOT, "tests", "web_socket", "certs")
UNIT_TESTS = os.path.join(PYTHON_PACKAGE, "tests")

sys.path.insert(0, os.path.join(ROOT, "tests", "web_socket", "lib"))
if PYTHON_PACKAGE not in sys.path:
    sys.path.insert(0, PYTHON_PACKAGE)

SKIP = 77


def skip(reason):
    print("SKIP %s: %s" % (os.path.basename(sys.argv[0]), reason), flush=True)
    sys.exit(SKIP)


try:
    import websockets  # noqa: F401  (brokerclient and wsnode need it)
    del websockets
except ImportError:
    skip("%s has no websockets module" % sys.executable)

import wsnode  # noqa: E402
from wsnode import TestFailure, check, check_eq, run  # noqa: E402,F401

__all__ = ["CERTS", "Node", "PYTHON_PACKAGE", "ROOT", "SKIP", "TLS_CLIENT", "TLS_NODE",
           "TestFailure", "UNIT_TESTS", "blocking", "check", "check_eq", "run", "skip"]

#: broker.ssl.* options of a node serving wss:// with the test PKI (as ws.tls does).
TLS_NODE = {"certificate": os.path.join(CERTS, "server.pem"),
            "key": os.path.join(CERTS, "server.enc.key"), "passphrase": "12345",
            "cafile": os.path.join(CERTS, "ca.pem")}
#: brokerclient options of a client the test CA signed.
TLS_CLIENT = {"cafile": os.path.join(CERTS, "ca.pem"),
              "certfile": os.path.join(CERTS, "client.pem"),
              "keyfile": os.path.join(CERTS, "client.key")}


class Node(wsnode.Node):
    """A wsnode.Node that restart() brings back on the same WebSocket port."""

    _fixed_ws_port = None

    def _start(self):
        if self._fixed_ws_port is None:
            return super()._start()
        # wsnode picks its ports with free_port(); hand it the old one instead.
        pick = wsnode.free_port
        wsnode.free_port = lambda: self._fixed_ws_port
        try:
            return super()._start()
        finally:
            wsnode.free_port = pick

    def restart(self, attempts=20):
        """Kills the node and starts it again with the same arguments and WebSocket port
        (retrying while the port is still held by the old process' connections)."""
        self.kill()
        self._fixed_ws_port = self.ws_port
        for _ in range(attempts):
            if self._start():
                return
            self.kill()
        raise TestFailure("%s did not restart on port %d\n%s"
                          % (self.name, self.ws_port, self.describe()))


async def blocking(fn, *args, **kwargs):
    """Runs blocking code (the synchronous client) on a worker thread, so the test's event
    loop, and its time limit, keep running."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(None, functools.partial(fn, *args, **kwargs))
