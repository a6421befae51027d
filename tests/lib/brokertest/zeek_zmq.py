"""Zeek cluster nodes of the ZeroMQ backend, emulated with pyzmq (Debian's python3-zmq), and
the forwarders they connect to.

A `ZeekNode` opens the two sockets a Zeek node opens, with Zeek's options
(doc/protocol/zeromq.md §1), and speaks like it: subscriptions as 0x01/0x00 + prefix on its
XSUB, events as 4 frames (topic, node id, format, payload) on its XPUB, the subscriptions of
the cluster read from its XPUB. What Zeek's scripts do on top (nodeid and node topics, the
ZeroMQ::hello / Cluster::hello exchange, node_up and node_down) is tests/zeromq/zeek_cluster.py.

Forwarders, chosen by `make_forwarder()` (the ZMQ_FORWARDER environment variable:
`reference`, the default, or `node`):
- `ReferenceForwarder`: Zeek's forwarder (zmq_proxy_steerable between an XSUB and an XPUB
  with XPUB_VERBOSER and XPUB_NODROP) in a thread, with Zeek's ZAP handler under CURVE;
- `NodeForwarder`: broker-node started with the broker.zeromq.* options (doc/zeek-cluster.md).
Both have `xsub_port` (where node XPUBs connect), `xpub_port` (where node XSUBs connect),
`restart()` on the same ports and `close()`. Every wait is bounded.

Import only where pyzmq is there: `zmq_available()` says whether it is (scripts then call
checks.skip_script).
"""

import os
import subprocess
import threading
import time

from .checks import TestFailure
from .net import LOCALHOST, free_port

try:
    import zmq
    import zmq.utils.z85
    import zmq.utils.monitor
except ImportError:  # The caller skips its script.
    zmq = None

WAIT_MS = 5000
ZAP_ENDPOINT = "inproc://zeromq.zap.01"
# Zeek's forwarder counters (zmq_proxy_steerable's STATISTICS, in its order), without the
# zeek_cluster_zeromq_proxy_ prefix. frontend: the XSUB that node XPUBs connect to; backend:
# the XPUB that node XSUBs connect to. A multipart message counts once.
PROXY_STATS = ["frontend_messages_received", "frontend_bytes_received",
               "frontend_messages_sent", "frontend_bytes_sent",
               "backend_messages_received", "backend_bytes_received",
               "backend_messages_sent", "backend_bytes_sent"]


def zmq_available():
    return zmq is not None


def curve_keys():
    """A CURVE setup as Zeek's has it: the forwarder's key pair and the one client key pair
    all nodes share, Z85 as bytes: {server_public, server_secret, client_public,
    client_secret}."""
    sp, ss = zmq.curve_keypair()
    cp, cs = zmq.curve_keypair()
    return {"server_public": sp, "server_secret": ss, "client_public": cp,
            "client_secret": cs}


def forwarder_kind():
    """`reference` or `node`, from ZMQ_FORWARDER (default reference)."""
    kind = os.environ.get("ZMQ_FORWARDER", "reference")
    if kind not in ("reference", "node"):
        raise TestFailure("ZMQ_FORWARDER=%r: expected reference or node" % kind)
    return kind


def make_forwarder(ctx, node_bin, curve=None, **node_options):
    """The forwarder ZMQ_FORWARDER selects; `node_options` go to NodeForwarder only."""
    if forwarder_kind() == "node":
        return NodeForwarder(node_bin, curve=curve, **node_options)
    return ReferenceForwarder(ctx, curve=curve)


class ReferenceForwarder:
    """Zeek's central XPUB/XSUB forwarder on 127.0.0.1: ephemeral ports unless given. With
    `curve` (curve_keys()) both sockets are CURVE servers and a ZAP handler admits exactly
    the client public key, as Zeek's does."""

    kind = "reference"

    def __init__(self, ctx, xsub_port=0, xpub_port=0, curve=None):
        self._ctx = ctx
        self.curve = curve
        self.xsub_port, self.xpub_port = xsub_port, xpub_port
        self.refused = 0  # CURVE clients the ZAP handler turned away
        self._start()

    def _start(self):
        ctx = self._ctx
        self._zap_thread = None
        if self.curve:
            self._zap = ctx.socket(zmq.REP)
            self._zap.setsockopt(zmq.LINGER, 0)
            self._zap.bind(ZAP_ENDPOINT)
            self._zap_stop = threading.Event()
            self._zap_thread = threading.Thread(target=self._zap_loop, daemon=True)
            self._zap_thread.start()
        self._xpub = ctx.socket(zmq.XPUB)
        self._xpub.setsockopt(zmq.XPUB_VERBOSER, 1)
        self._xpub.setsockopt(zmq.XPUB_NODROP, 1)
        self._xsub = ctx.socket(zmq.XSUB)
        for s in (self._xpub, self._xsub):
            s.setsockopt(zmq.LINGER, 0)
            if self.curve:
                s.setsockopt(zmq.CURVE_SERVER, 1)
                s.setsockopt(zmq.CURVE_SECRETKEY, self.curve["server_secret"])
        self.xpub_port = self._bind(self._xpub, self.xpub_port)
        self.xsub_port = self._bind(self._xsub, self.xsub_port)
        name = "inproc://reference-forwarder-%d-%d" % (id(self), time.monotonic_ns())
        self._control = ctx.socket(zmq.PAIR)
        self._control.bind(name)
        peer = ctx.socket(zmq.PAIR)
        peer.connect(name)
        self._thread = threading.Thread(target=self._run, args=(peer,), daemon=True)
        self._thread.start()

    @staticmethod
    def _bind(sock, port):
        if port == 0:
            return sock.bind_to_random_port("tcp://%s" % LOCALHOST)
        deadline = time.monotonic() + 10
        while True:  # The port of a forwarder closed a moment ago may still be held.
            try:
                sock.bind("tcp://%s:%d" % (LOCALHOST, port))
                return port
            except zmq.ZMQError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def _zap_loop(self):
        want = zmq.utils.z85.decode(self.curve["client_public"])
        while not self._zap_stop.is_set():
            if not self._zap.poll(100):
                continue
            req = self._zap.recv_multipart()
            version, request_id, mechanism = req[0], req[1], req[5]
            ok = mechanism == b"CURVE" and len(req) > 6 and req[6] == want
            if not ok:
                self.refused += 1
            self._zap.send_multipart([version, request_id, b"200" if ok else b"400",
                                      b"OK" if ok else b"unknown client key", b"", b""])

    def _run(self, control):
        try:
            zmq.proxy_steerable(self._xsub, self._xpub, None, control)
        except zmq.ZMQError:
            pass
        finally:
            for s in (self._xsub, self._xpub, control):
                s.close(0)

    def statistics(self):
        """Zeek's forwarder counters: {name in PROXY_STATS: value}."""
        self._control.send(b"STATISTICS")
        if not self._control.poll(WAIT_MS):
            raise TestFailure("the reference forwarder did not answer STATISTICS")
        parts = self._control.recv_multipart()
        return {k: int.from_bytes(v, "little") for k, v in zip(PROXY_STATS, parts)}

    def close(self):
        self._control.send(b"TERMINATE")
        self._thread.join(timeout=5)
        self._control.close(0)
        if self._zap_thread:
            self._zap_stop.set()
            self._zap_thread.join(timeout=5)
            self._zap.close(0)

    def restart(self):
        """Closes both sockets (every node connection drops) and binds the same ports
        again."""
        self.close()
        self._start()


def node_has_zeromq(node_bin):
    """Whether broker-node knows the broker.zeromq.* options (its --help lists them)."""
    try:
        out = subprocess.run([node_bin, "--help"], capture_output=True, text=True,
                             timeout=15)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "zeromq.xsub-port" in out.stdout + out.stderr


def _listening(port):
    """Whether something listens on 127.0.0.1:`port` (from /proc/net/tcp: no connection
    is made, so the forwarder sees nothing)."""
    want = "0100007F:%04X" % port
    try:
        with open("/proc/net/tcp") as f:
            return any(l.split()[1] == want and l.split()[3] == "0A" for l in f.readlines()[1:])
    except OSError:
        return False


class NodeForwarder:
    """broker-node as the forwarder (doc/zeek-cluster.md): `xsub_port`, `xpub_port`, and
    `node` (a brokertest Node: `.port` the peering port, `.ws_port`, `.metrics_port`).
    `args` are more broker-node arguments; `curve`: curve_keys(), set as the server key
    pair and the one admitted client key."""

    kind = "node"

    def __init__(self, node_bin, curve=None, args=(), web_socket=False, metrics=True,
                 listen=True, name="forwarder", env=None):
        from .nodes import Node  # Only here: the reference forwarder needs no broker-node.
        if not node_has_zeromq(node_bin):
            raise TestFailure("%s has no broker.zeromq.* options (its --help lists no "
                              "--broker.zeromq.xsub-port): the ZeroMQ transport is not in "
                              "this build" % node_bin)
        self.curve = curve
        self.xsub_port, self.xpub_port = free_port(), free_port()
        zargs = ["--broker.zeromq.address=%s" % LOCALHOST,
                 "--broker.zeromq.xsub-port=%d" % self.xsub_port,
                 "--broker.zeromq.xpub-port=%d" % self.xpub_port]
        if curve:
            zargs += ["--broker.zeromq.curve-server-secret-key=%s" % curve["server_secret"].decode(),
                      "--broker.zeromq.curve-server-public-key=%s" % curve["server_public"].decode(),
                      "--broker.zeromq.curve-client-public-key=%s" % curve["client_public"].decode()]
        self.node = Node(node_bin, zargs + list(args), name, listen=listen,
                         web_socket=web_socket, metrics=metrics, env=env)
        self._wait_listening()

    def _wait_listening(self, timeout=15.0):
        deadline = time.monotonic() + timeout
        while not (_listening(self.xsub_port) and _listening(self.xpub_port)):
            if not self.node.alive() or time.monotonic() > deadline:
                raise TestFailure("broker-node does not listen on its ZeroMQ ports %d and %d\n%s"
                                  % (self.xsub_port, self.xpub_port, self.node.describe()))
            time.sleep(0.05)

    def statistics(self):
        """Zeek's forwarder counters from /metrics (zeek_cluster_zeromq_proxy_*, with or
        without _total): {name in PROXY_STATS: value}; a missing one fails."""
        from .net import scrape_metrics
        m = scrape_metrics(self.node.metrics_port)
        out = {}
        for k in PROXY_STATS:
            full = "zeek_cluster_zeromq_proxy_" + k
            v = m.get(full + "_total", m.get(full))
            if v is None:
                raise TestFailure("no %s in /metrics" % full)
            out[k] = int(v)
        return out

    def restart(self):
        """SIGKILL and start again on the same ports (every node connection drops)."""
        self.node.restart()
        self._wait_listening()

    def close(self):
        self.node.kill()


class ZeekNode:
    """One Zeek node: `xpub` connects to the forwarder's XSUB, `xsub` to its XPUB. `curve`
    (curve_keys()): CURVE client with the client key pair and the forwarder's public key;
    `monitor`: events of the XPUB's monitor socket collected by poll_monitor()."""

    def __init__(self, ctx, node_id, xsub_port, xpub_port, curve=None, monitor=False):
        self.node_id = node_id.encode() if isinstance(node_id, str) else node_id
        self.xpub = ctx.socket(zmq.XPUB)
        self.xpub.setsockopt(zmq.XPUB_VERBOSE, 1)
        self.xpub.setsockopt(zmq.XPUB_NODROP, 1)
        self.xpub.setsockopt(zmq.SNDHWM, 1000)
        self.xpub.setsockopt(zmq.LINGER, 500)
        self.xsub = ctx.socket(zmq.XSUB)
        self.xsub.setsockopt(zmq.RCVHWM, 1000)
        self.xsub.setsockopt(zmq.LINGER, 0)
        if curve:
            for s in (self.xpub, self.xsub):
                s.setsockopt(zmq.CURVE_SERVERKEY, curve["server_public"])
                s.setsockopt(zmq.CURVE_PUBLICKEY, curve["client_public"])
                s.setsockopt(zmq.CURVE_SECRETKEY, curve["client_secret"])
        self.monitor = self.xpub.get_monitor_socket() if monitor else None
        self.monitor_events = []
        self.xpub.connect("tcp://%s:%d" % (LOCALHOST, xsub_port))
        self.xsub.connect("tcp://%s:%d" % (LOCALHOST, xpub_port))
        self._ready_counter = 0

    def subscribe(self, prefix):
        self.xsub.send(b"\x01" + prefix)

    def unsubscribe(self, prefix):
        self.xsub.send(b"\x00" + prefix)

    def publish(self, topic, payload, fmt=b"broker-bin-v1"):
        """Zeek's 4-frame event; False if the XPUB would block (the high-water mark
        reached under NODROP)."""
        try:
            self.xpub.send_multipart([topic, self.node_id, fmt, payload], flags=zmq.NOBLOCK)
            return True
        except zmq.Again:
            return False

    def next_subscription(self, timeout_ms=WAIT_MS):
        """(subscribe: bool, prefix: bytes) from the XPUB, or None when nothing comes."""
        if not self.xpub.poll(timeout_ms, zmq.POLLIN):
            return None
        msg = self.xpub.recv()
        return (msg[:1] == b"\x01", msg[1:])

    def subscriptions_until(self, wanted, timeout_ms=WAIT_MS):
        """Reads the XPUB's notifications until `wanted` (subscribe, prefix) arrives; returns
        all of them, or raises TimeoutError with those seen."""
        seen = []
        while True:
            item = self.next_subscription(timeout_ms)
            if item is None:
                raise TimeoutError("no %r among %r" % (wanted, seen))
            seen.append(item)
            if item == wanted:
                return seen

    def next_event(self, timeout_ms=WAIT_MS):
        """The next multipart message from the XSUB, or None."""
        if not self.xsub.poll(timeout_ms, zmq.POLLIN):
            return None
        return self.xsub.recv_multipart()

    def wait_ready(self, timeout_ms=WAIT_MS):
        """Zeek's ready-to-publish wait: subscribe to an internal topic and wait until the own
        XPUB reports it; by then the forwarder has sent every subscription it holds. Returns
        the notifications read on the way."""
        self._ready_counter += 1
        topic = b"zeek.zeromq.internal.%s.%d." % (self.node_id, self._ready_counter)
        self.subscribe(topic)
        seen = self.subscriptions_until((True, topic), timeout_ms)
        self.unsubscribe(topic)
        return seen

    def poll_monitor(self, timeout_ms=0):
        """Reads the monitor socket's pending events into monitor_events ({event, value,
        endpoint}); returns them all."""
        while self.monitor is not None and self.monitor.poll(timeout_ms):
            self.monitor_events.append(zmq.utils.monitor.recv_monitor_message(self.monitor))
            timeout_ms = 0
        return self.monitor_events

    def close(self):
        if self.monitor is not None:
            self.xpub.disable_monitor()
            self.monitor.close(0)
            self.monitor = None
        self.xpub.close(0)
        self.xsub.close(0)
