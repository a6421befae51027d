#!/usr/bin/env python3
"""zmq.stall: one Zeek node stops reading; what happens to the others?

One publisher node sends --rate events/s of PAYLOAD bytes to a topic four subscriber nodes
share. First all four read (the unstalled rate of each), then one stops reading: after
FILL seconds, in which its buffers (its XSUB's RCVHWM, the sockets, the forwarder's queue
for it) fill, the three others' rates are measured again.

- broker-node (ZMQ_FORWARDER=node) has a bounded queue per connection with drop_oldest
  (broker.zeromq.overflow-policy): the three keep >= 90 % of their unstalled rate, and the
  drops are counted on exactly one connection in /v1/status.
- Zeek's own forwarder (ZMQ_FORWARDER=reference: libzmq's proxy with XPUB_NODROP) blocks
  on the full queue, and with it every node: the three fall below half their rate. That is
  the behaviour broker-node is to improve on, and it shows that this measurement sees a
  stall when there is one.

Usage: stall.py <broker-node>. Needs /usr/bin/python3 with python3-zmq (else skipped).
"""

import json
import os
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from brokertest.checks import TestFailure, check, run_tests, skip_script  # noqa: E402
from brokertest.net import addr, scrape_metrics  # noqa: E402
from brokertest import zeek_zmq  # noqa: E402

if not zeek_zmq.zmq_available():
    skip_script("no pyzmq (apt-get install python3-zmq, or scripts/install-deps)")
zmq = zeek_zmq.zmq

RATE = 2000  # events per second
PAYLOAD = 8192
PHASE = 3.0  # seconds of each measurement
FILL = 3.0  # seconds between the stall and the second measurement
TOPIC = b"zeek/stall/"
SUBSCRIBERS = 4
MIN_SHARE = 0.9  # broker-node: the others keep this share of their unstalled rate
REFERENCE_STALLED = 0.5  # libzmq's forwarder: the others fall below this share


class Load:
    """The publisher and the subscribers, driven from one loop."""

    def __init__(self, ctx, fwd):
        self.pub = zeek_zmq.ZeekNode(ctx, b"publisher", fwd.xsub_port, fwd.xpub_port)
        self.subs = []
        try:
            self._connect(ctx, fwd)
        except BaseException:
            self.close()
            raise

    def _connect(self, ctx, fwd):
        self.pub.wait_ready()
        for i in range(SUBSCRIBERS):
            s = zeek_zmq.ZeekNode(ctx, b"sub-%d" % i, fwd.xsub_port, fwd.xpub_port)
            self.subs.append(s)
            s.subscribe(TOPIC)
            s.wait_ready()
        seen = 0
        deadline = time.monotonic() + 10
        while seen < SUBSCRIBERS:  # XPUB_VERBOSE: each node's subscription is reported.
            item = self.pub.next_subscription(max(1, int(1000 * (deadline - time.monotonic()))))
            check(item is not None, "the publisher saw %d of %d subscriptions to %r"
                  % (seen, SUBSCRIBERS, TOPIC))
            seen += item == (True, TOPIC)
        self.payload = os.urandom(PAYLOAD)
        self.sent = self.blocked = 0
        self.start = time.monotonic()

    def run(self, seconds, readers):
        """Publishes at RATE and drains `readers` for `seconds`; the events each reader got."""
        got = [0] * len(readers)
        poller = zmq.Poller()
        for s in readers:
            poller.register(s.xsub, zmq.POLLIN)
        end = time.monotonic() + seconds
        while True:
            now = time.monotonic()
            if now >= end:
                return got
            due = int((now - self.start) * RATE)
            while self.sent < due:
                if not self.pub.publish(TOPIC + b"ev", self.payload):
                    self.blocked += 1
                    self.start += 1.0 / RATE  # Zeek's XPUB would block: skip this slot.
                    due -= 1
                    continue
                self.sent += 1
            poller.poll(1)
            for i, s in enumerate(readers):
                for _ in range(1000):
                    try:
                        s.xsub.recv_multipart(zmq.NOBLOCK)
                        got[i] += 1
                    except zmq.Again:
                        break

    def close(self):
        for n in [self.pub] + self.subs:
            n.close()


def status_drops(port):
    """(total dropped, [connection entries with dropped > 0]) from /v1/status: every object
    with a `dropped` count and a `queue` is a connection or local handler entry."""
    with urllib.request.urlopen("http://%s/v1/status" % addr(port), timeout=10) as res:
        doc = json.load(res)
    found = []

    def walk(x):
        if isinstance(x, dict):
            if isinstance(x.get("dropped"), (int, float)) and "queue" in x and x["dropped"] > 0:
                found.append(x)
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    walk(doc)
    return doc.get("totals", {}).get("dropped"), found


def test_one_stalled_subscriber(node_bin):
    """one of four subscribers stops reading: broker-node keeps the others' rate and counts
    the drops on that connection; libzmq's forwarder stalls them all"""
    ctx = zmq.Context()
    fwd = zeek_zmq.make_forwarder(ctx, node_bin)
    load = None
    try:
        load = Load(ctx, fwd)
        before = load.run(PHASE, load.subs)
        rates0 = [n / PHASE for n in before]
        for r in rates0:
            check(r >= MIN_SHARE * RATE, "unstalled: a subscriber got %.0f of %d events/s; "
                  "the machine is too busy to measure" % (r, RATE))
        fast = load.subs[1:]
        load.run(FILL, fast)
        after = load.run(PHASE, fast)
        shares = [n / PHASE / r0 for n, r0 in zip(after, rates0[1:])]
        report = ("unstalled %s events/s; with sub-0 stalled %s (shares %s); publisher "
                  "blocked %d times" % (["%.0f" % r for r in rates0],
                                        ["%.0f" % (n / PHASE) for n in after],
                                        ["%.2f" % s for s in shares], load.blocked))
        print(report, flush=True)
        if fwd.kind == "reference":
            check(all(s < REFERENCE_STALLED for s in shares),
                  "libzmq's NODROP forwarder did not stall the others: " + report)
            return
        check(all(s >= MIN_SHARE for s in shares), "the others slowed down: " + report)
        total, entries = status_drops(fwd.node.metrics_port)
        if not entries:
            zeromq = {k: v for k, v in scrape_metrics(fwd.node.metrics_port).items()
                      if "zeromq" in k}
            raise TestFailure("no connection in /v1/status counts drops (totals.dropped = %r); "
                              "zeromq metrics: %r" % (total, zeromq))
        check(len(entries) == 1, "drops on %d entries, expected the stalled one: %r"
              % (len(entries), entries))
        check(total is not None and total >= entries[0]["dropped"],
              "totals.dropped %r below the connection's %r" % (total, entries[0]["dropped"]))
    finally:
        if load:
            load.close()
        fwd.close()
        ctx.term()


run_tests([test_one_stalled_subscriber], limit=60)
