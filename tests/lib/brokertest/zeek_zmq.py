"""Zeek cluster nodes of the ZeroMQ backend, emulated with pyzmq (Debian's python3-zmq).

A `ZeekNode` opens the two sockets a Zeek node opens, with Zeek's options
(doc/protocol/zeromq.md §1), and speaks like it: subscriptions as 0x01/0x00 + prefix on its
XSUB, events as 4 frames (topic, node id, format, payload) on its XPUB, the subscriptions of
the cluster read from its XPUB. `ReferenceForwarder` is Zeek's forwarder (zmq_proxy_steerable
between an XSUB and an XPUB with XPUB_VERBOSER and XPUB_NODROP) in a thread, the behaviour a
forwarder of ours must reproduce. Every wait is bounded.

Import only where pyzmq is there: `zmq_available()` says whether it is (scripts then call
checks.skip_script).
"""

import threading

try:
    import zmq
except ImportError:  # The caller skips its script.
    zmq = None

WAIT_MS = 5000


def zmq_available():
    return zmq is not None


class ReferenceForwarder:
    """Zeek's central XPUB/XSUB forwarder on ephemeral 127.0.0.1 ports: `xsub_port` is where
    node XPUBs connect, `xpub_port` where node XSUBs connect."""

    def __init__(self, ctx):
        self._ctx = ctx
        self._xpub = ctx.socket(zmq.XPUB)
        self._xpub.setsockopt(zmq.XPUB_VERBOSER, 1)
        self._xpub.setsockopt(zmq.XPUB_NODROP, 1)
        self._xpub.setsockopt(zmq.LINGER, 0)
        self._xsub = ctx.socket(zmq.XSUB)
        self._xsub.setsockopt(zmq.LINGER, 0)
        self.xpub_port = self._xpub.bind_to_random_port("tcp://127.0.0.1")
        self.xsub_port = self._xsub.bind_to_random_port("tcp://127.0.0.1")
        self._control = ctx.socket(zmq.PAIR)
        self._control.bind("inproc://reference-forwarder-%d" % id(self))
        peer = ctx.socket(zmq.PAIR)
        peer.connect("inproc://reference-forwarder-%d" % id(self))
        self._thread = threading.Thread(target=self._run, args=(peer,), daemon=True)
        self._thread.start()

    def _run(self, control):
        try:
            zmq.proxy_steerable(self._xsub, self._xpub, None, control)
        except zmq.ZMQError:
            pass
        finally:
            for s in (self._xsub, self._xpub, control):
                s.close(0)

    def close(self):
        self._control.send(b"TERMINATE")
        self._thread.join(timeout=5)
        self._control.close(0)


class ZeekNode:
    """One Zeek node: `xpub` connects to the forwarder's XSUB, `xsub` to its XPUB."""

    def __init__(self, ctx, node_id, xsub_port, xpub_port):
        self.node_id = node_id.encode() if isinstance(node_id, str) else node_id
        self.xpub = ctx.socket(zmq.XPUB)
        self.xpub.setsockopt(zmq.XPUB_VERBOSE, 1)
        self.xpub.setsockopt(zmq.XPUB_NODROP, 1)
        self.xpub.setsockopt(zmq.SNDHWM, 1000)
        self.xpub.setsockopt(zmq.LINGER, 500)
        self.xsub = ctx.socket(zmq.XSUB)
        self.xsub.setsockopt(zmq.RCVHWM, 1000)
        self.xsub.setsockopt(zmq.LINGER, 0)
        self.xpub.connect("tcp://127.0.0.1:%d" % xsub_port)
        self.xsub.connect("tcp://127.0.0.1:%d" % xpub_port)
        self._ready_counter = 0

    def subscribe(self, prefix):
        self.xsub.send(b"\x01" + prefix)

    def unsubscribe(self, prefix):
        self.xsub.send(b"\x00" + prefix)

    def publish(self, topic, payload, fmt=b"broker-bin-v1"):
        """Zeek's 4-frame event; False if the XPUB would block (no matching subscriber
        known yet, or the high-water mark reached)."""
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

    def close(self):
        self.xpub.close(0)
        self.xsub.close(0)
