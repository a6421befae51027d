"""broker-node processes and their output.

    with Cleanup() as cleanup:
        a = cleanup.add(Node(node_bin, ["-t", "/t", "-v"], "A"))   # ready: a.port is known
        b = cleanup.add(Node(node_bin, ["-t", "/t", "-v", "--peers", peer_uri(a.port)], "B"))
        b.wait_for(is_status("peer_added"), what="B's peering")
        b.wait_count(is_received, 10, what="the messages")
        b.received()                                 # [(topic, value text), ...]

    with Node(node_bin, web_socket=True, metrics=True) as node:     # node.ws_port, .metrics_port
        ...
        node.restart()            # SIGKILLed and started again on the same ports

    Node(node_bin, web_socket=True, tls=NODE_TLS)     # wss:// with the test PKI (cert())

A Node is a Proc (procs.py) that is ready when its constructor (or restart()) returns: it
printed "listening on N" (unless listen=False) and logged that its WebSocket and metrics
servers listen, if asked for.
"""

import os
import time

from .checks import TestFailure
from .net import LOCALHOST, WEB_SOCKET_PATH, free_port
from .procs import Proc

STARTUP_TIMEOUT = 15.0
# A port another process holds (a node killed a moment ago, or one that took a free port
# first) is tried again this often, this far apart.
PORT_ATTEMPTS = 40
PORT_PAUSE = 0.25

# The test PKI (remade by its make-certs.sh): a CA; the node's certificate, with a key
# encrypted by a passphrase; a client certificate that CA signed ("client"), and one that
# another CA signed ("intruder").
CERTS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))), "web_socket", "certs")


def cert(name):
    """The path of a file of the test PKI, e.g. cert("client.pem")."""
    return os.path.join(CERTS, name)


#: broker.ssl.* options (Node's `tls`) of a node that serves with the test PKI and asks its
#: peers and WebSocket clients for certificates from its CA.
NODE_TLS = {"certificate": cert("server.pem"), "key": cert("server.enc.key"),
            "passphrase": "12345", "cafile": cert("ca.pem")}


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
      through BROKER_WEB_SOCKET_PORT / BROKER_METRICS_PORT (a port another process took
      meanwhile is replaced by a new free one);
    tls: broker.ssl.* options (e.g. NODE_TLS); without them the node speaks plain TCP
      (--broker.disable-ssl), unless plain=False;
    env: more environment variables; `options` go to Proc (keep, log_dir)."""

    def __init__(self, binary, args=(), name="node", port=None, listen=True, web_socket=False,
                 metrics=False, tls=None, plain=True, env=None, timeout=STARTUP_TIMEOUT,
                 **options):
        self.tls = dict(tls or {})
        transport = ["--broker.ssl.%s=%s" % kv for kv in sorted(self.tls.items())]
        if not self.tls and plain:
            transport = ["--broker.disable-ssl"]
        super().__init__(binary, transport + list(args), name, env, start=False, **options)
        self._command = list(self.argv)
        self._listen, self._timeout = listen, timeout
        self.port = port
        self.ws_port = self.metrics_port = None
        free = (["ws_port"] if web_socket else []) + (["metrics_port"] if metrics else [])
        self._start(free)

    def restart(self):
        """Kills the node and starts it again with the same arguments, environment and
        ports (the peering port too, once the node has one), trying again while the old
        process's connections still hold a port; returns when it is ready."""
        self.kill()
        self._start([])

    def _start(self, free):
        """Spawns the node until it is ready; the port attributes named in `free` get a new
        free port on every attempt, the others stay."""
        for attempt in range(PORT_ATTEMPTS):
            for attr in free:
                setattr(self, attr, free_port())
            self._set_ports()
            self.spawn()
            try:
                self._wait_ready()
                return
            except TestFailure:
                self.kill()
                if not self._port_taken():
                    raise
            time.sleep(PORT_PAUSE)
        raise TestFailure("%s: its ports stayed in use over %d attempts\n%s"
                          % (self.name, PORT_ATTEMPTS, self.describe()))

    def _set_ports(self):
        fixed = ["-p", str(self.port)] if self.port is not None else []
        self.argv = self._command[:1] + fixed + self._command[1:]
        for var, port in (("BROKER_WEB_SOCKET_PORT", self.ws_port),
                          ("BROKER_METRICS_PORT", self.metrics_port)):
            if port is not None:
                self.env[var] = str(port)

    def _wait_ready(self):
        for server, port in (("web-socket", self.ws_port), ("metrics", self.metrics_port)):
            if port is not None:
                self.wait_for(lambda l, s=server, p=port: "%s: listening on " % s in l
                              and l.endswith(":%d" % p), self._timeout,
                              "the %s server on port %d" % (server, port), stderr=True)
        if self._listen:
            self.port = self.listening_port(self._timeout)

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
