"""ws.backpressure: a client that stops reading, under each overflow policy
(doc/protocol/websocket.md §7).

Three clients on one node with broker.web-socket-buffer-size=64:
- slow: a raw-socket client with a 4 KiB receive buffer that reads its ack and then does not
  read at all until the flood is over (a library client would keep reading in the
  background);
- fast: a websockets client subscribed to the same topic, reading all the time;
- publisher: floods 5000 messages of about 1 KiB, never more than 32 ahead of the fast
  client, so only the slow client can fall behind.

Expected:
- disconnect (default): the core drops the slow client (broker_handler_disconnects_total 1); when it
  reads, it finds some data, then exactly the backpressure_overflow error frame, then close
  1000;
- drop_oldest: the slow client stays; it gets an ordered subset ending with the newest 64
  messages, and the node counts every message it missed as dropped;
- drop_newest: the slow client stays; it gets an unbroken run from the first message, and
  the rest is counted as dropped;
- in every case the fast client receives all 5000 messages, in order.
"""

import asyncio
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.checks import TestFailure, check, check_eq, run_tests  # noqa: E402
from brokertest.net import scrape_metrics  # noqa: E402
from brokertest.nodes import Node  # noqa: E402
from brokertest.rawws import CLOSE, TEXT, RawClient, close_code  # noqa: E402
from brokertest.wsclient import error_frame, poll_metric, subscribe  # noqa: E402

BUFFER = 64
FLOOD = 5000
WINDOW = 32
PAYLOAD = "p" * 1000
SEQ = re.compile(r'^\{"type":"data-message","topic":"/flood","@data-type":"vector",'
                 r'"data":\[\{"@data-type":"count","data":(\d+)\},')


def flood_message(i):
    return ('{"type":"data-message","topic":"/flood","@data-type":"vector","data":['
            '{"@data-type":"count","data":%d},{"@data-type":"string","data":"%s"}]}'
            % (i, PAYLOAD))


def seq_of(text):
    m = SEQ.match(text)
    if not m:
        raise TestFailure("not a flood message: %r" % text[:200])
    return int(m.group(1))


class FastReader:
    """Reads a websockets client all the time, recording sequence numbers."""

    def __init__(self, ws):
        self.ws = ws
        self.seqs = []
        self.changed = asyncio.Event()
        self.task = asyncio.ensure_future(self._run())

    async def _run(self):
        while True:
            self.seqs.append(seq_of(await self.ws.recv()))
            self.changed.set()

    async def wait_for(self, count, timeout=30):
        async def loop():
            while len(self.seqs) < count:
                self.changed.clear()
                await self.changed.wait()
        try:
            await asyncio.wait_for(loop(), timeout)
        except asyncio.TimeoutError:
            raise TestFailure("the fast client has %d of %d messages" % (len(self.seqs), count))


async def flood(pub, fast, first, count):
    for i in range(first, first + count):
        if i - len(fast.seqs) >= WINDOW:
            await fast.wait_for(i - WINDOW + 1)
        await pub.send(flood_message(i))


def slow_client(port):
    slow = RawClient(port, rcvbuf=4096)
    slow.send_text('["/flood"]')
    check(slow.recv_text().startswith('{"type":"ack"'), "no ack for the slow client")
    return slow


def read_until_idle(slow, idle=2.0):
    """Reads the slow client's data frames until none arrives for `idle` seconds.

    Called once the fast client has everything: by then the node has offered every message
    to the slow client's queue too, so whatever it kept is already on its way."""
    seqs = []
    while True:
        text = slow.poll_text(idle)
        if text is None:
            return seqs
        seqs.append(seq_of(text))


def check_increasing(seqs, what):
    bad = [(a, b) for a, b in zip(seqs, seqs[1:]) if b <= a]
    check(not bad, "%s out of order at %r" % (what, bad[:5]))


async def scenario(binary, policy):
    args = ["--broker.web-socket-buffer-size=%d" % BUFFER]
    if policy:
        args.append("--broker.web-socket-overflow-policy=" + policy)
    with Node(binary, args, "node (%s)" % (policy or "default"), web_socket=True,
              metrics=True) as node:
        port, mport = node.ws_port, node.metrics_port
        slow = slow_client(port)
        try:
            fast_ws, _ = await subscribe(port, ["/flood"], max_queue=None)
            fast = FastReader(fast_ws)
            pub, _ = await subscribe(port, [])
            await flood(pub, fast, 0, FLOOD)
            await fast.wait_for(FLOOD)
            check_eq(fast.seqs, list(range(FLOOD)), "the fast client's messages (%s)" % policy)
            if policy in (None, "disconnect"):
                await poll_metric(mport, 'broker_handler_disconnects_total{kind="web_socket"}',
                                  lambda v: v == 1, what="the slow client's disconnect")
                await poll_metric(mport, 'broker_connections{type="web-socket"}',
                                  lambda v: v == 2, what="two clients left after it")
                seqs = []
                while True:
                    opcode, payload = slow.recv_message()
                    check_eq(opcode, TEXT, "opcode of the slow client's frame after %d data "
                             "frames" % len(seqs))
                    text = payload.decode()
                    if not text.startswith('{"type":"data-message"'):
                        break
                    seqs.append(seq_of(text))
                check_increasing(seqs, "the slow client's data")
                check(len(seqs) < FLOOD, "the slow client got all %d messages" % FLOOD)
                check_eq(text, error_frame("output queue exceeded %d messages; disconnecting"
                                           % BUFFER, code="backpressure_overflow"),
                         "the frame after the slow client's data")
                opcode, payload = slow.recv_message()
                check(opcode == CLOSE, "expected a close frame right after the "
                      "backpressure_overflow error frame, got opcode 0x%x %r" % (opcode, payload))
                check_eq(close_code(payload)[0], 1000, "close code after backpressure_overflow")
                slow.send_close(1000)
                check(slow.expect_eof(), "the server kept TCP open after the close handshake")
                print("disconnect: the slow client read %d messages before the error frame"
                      % len(seqs))
            else:
                seqs = read_until_idle(slow)
                check_increasing(seqs, "the slow client's data")
                check(len(seqs) < FLOOD, "the slow client got all %d messages" % FLOOD)
                if policy == "drop_oldest":
                    check_eq(seqs[-BUFFER:], list(range(FLOOD - BUFFER, FLOOD)),
                             "the last %d messages the slow client got (the newest)" % BUFFER)
                else:
                    check(seqs == list(range(len(seqs))),
                          "drop_newest: the slow client's messages are not an unbroken run "
                          "from 0: %r..." % seqs[:20])
                # Still connected and subscribed.
                await flood(pub, fast, FLOOD, 1)
                check_eq(seq_of(slow.recv_text()), FLOOD, "the next message after the flood")
                m = scrape_metrics(mport)
                check_eq(m['broker_handler_disconnects_total{kind="web_socket"}'], 0,
                         "disconnects under " + policy)
                check_eq(m['broker_handler_dropped_messages_total{kind="web_socket",policy="%s"}'
                           % policy], FLOOD - len(seqs), "messages counted as dropped")
                print("%s: the slow client read %d of %d messages"
                      % (policy, len(seqs), FLOOD))
            fast.task.cancel()
            await pub.close()
            await fast_ws.close()
        finally:
            slow.close()


async def main(binary):
    for policy in (None, "drop_oldest", "drop_newest"):
        await scenario(binary, policy)


run_tests([main], limit=120)
