"""broker-node processes and their output.

    with Cleanup() as cleanup:
        a = cleanup.add(Node(node_bin, ["-t", "/t", "-v"], "A"))   # ready: a.port is known
        b = cleanup.add(Node(node_bin, ["-t", "/t", "-v", "--peers", peer_uri(a.port)], "B"))
        b.wait_for(is_status("peer_added"), what="B's peering")
        b.wait_count(is_received, 10, what="the messages")
        b.received()                                 # [(topic, value text), ...]

    with Node(node_bin, web_socket=True, metrics=True) as node:     # node.ws_port, .metrics_port
        ...

A Node is a Proc (procs.py) that is ready when its constructor returns: it printed
"listening on N" (unless listen=False) and logged that its WebSocket and metrics servers
listen, if asked for.
"""

import time

from .checks import TestFailure
from .net import LOCALHOST, WEB_SOCKET_PATH, free_port
from .procs import Proc

STARTUP_TIMEOUT = 15.0
# A port another process holds (a node killed a moment ago, or one that took a free port
# first) is tried again this often, this far apart.
PORT_ATTEMPTS = 40
PORT_PAUSE = 0.25


def peer_uri(port):
    return "tcp://%s:%d" % (LOCALHOST, port)


def is_status(code, peer=None):
    """A predicate for `status <code> <peer> ...` lines (of any peer if None)."""
    prefix = "status %s " % code + ("%s " % peer if peer else "")
    return lambda line: line.startswith(prefix)


def is_received(line):
    return line.startswith("received ")


class Node(Proc):
    """One broker-node (see the module comment).

    port: the peering port (default: one the node picks, read from its output);
    listen: wait for the peering port (False with --no-listen, or for a node expected to
      fail);
    web_socket / metrics: serve WebSocket clients / Prometheus metrics on free ports, set
      through BROKER_WEB_SOCKET_PORT / BROKER_METRICS_PORT;
    tls: broker.ssl.* options (e.g. {"certificate": path, ...}); without them the node
      speaks plain TCP (--broker.disable-ssl), unless plain=False;
    env: more environment variables; `options` go to Proc (keep, log_dir)."""

    def __init__(self, binary, args=(), name="node", port=None, listen=True, web_socket=False,
                 metrics=False, tls=None, plain=True, env=None, timeout=STARTUP_TIMEOUT,
                 **options):
        self.tls = dict(tls or {})
        transport = ["--broker.ssl.%s=%s" % kv for kv in sorted(self.tls.items())]
        if not self.tls and plain:
            transport = ["--broker.disable-ssl"]
        fixed = ["-p", str(port)] if port is not None else []
        super().__init__(binary, transport + fixed + list(args), name, env, start=False,
                         **options)
        self.port = port
        self.ws_port = self.metrics_port = None
        for attempt in range(PORT_ATTEMPTS):
            if web_socket:
                self.ws_port = free_port()
                self.env["BROKER_WEB_SOCKET_PORT"] = str(self.ws_port)
            if metrics:
                self.metrics_port = free_port()
                self.env["BROKER_METRICS_PORT"] = str(self.metrics_port)
            self.spawn()
            try:
                self._wait_ready(listen, timeout)
                return
            except TestFailure:
                self.kill()
                if not self._port_taken():
                    raise
            time.sleep(PORT_PAUSE)
        raise TestFailure("%s: its ports stayed in use over %d attempts\n%s"
                          % (name, PORT_ATTEMPTS, self.describe()))

    def _wait_ready(self, listen, timeout):
        for server, port in (("web-socket", self.ws_port), ("metrics", self.metrics_port)):
            if port is not None:
                self.wait_for(lambda l, s=server, p=port: "%s: listening on " % s in l
                              and l.endswith(":%d" % p), timeout,
                              "the %s server on port %d" % (server, port), stderr=True)
        if listen:
            self.port = self.listening_port(timeout)

    def _port_taken(self):
        return any("in use" in l for l in self.err_lines)

    def url(self, path=WEB_SOCKET_PATH):
        """The node's WebSocket URL (wss:// with TLS)."""
        return "%s://%s:%d%s" % ("wss" if self.tls else "ws", LOCALHOST, self.ws_port, path)

    def received(self):
        """The `received <topic> <value>` lines (of -v) as (topic, value text)."""
        result = []
        for l in self.matching(is_received):
            topic, _, value = l[len("received "):].partition(" ")
            result.append((topic, value))
        return result
