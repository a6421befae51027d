"""Each event type (0: 64-byte string, 1: Zeek event, 2: conn.log write, 3: table of sets)
crosses a peering complete, in batches and with a last batch cut short by --count; a type-0
event is a 64-byte string that starts with its send time."""

import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.checks import check, check_eq, run_tests  # noqa: E402
from brokertest.nodes import Node, is_received  # noqa: E402
from brokertest.procs import Cleanup, Proc  # noqa: E402

# Type 3 events are ~9 KB each and costly to build: fewer of them keep the test short.
EVENTS = {0: 3000, 1: 3000, 2: 3000, 3: 300}

# 7 does not divide the counts, so the last batch is a partial one.
BATCH_SIZE = 7


def one_type(tp, event_type, events):
    with Cleanup() as c:
        server = c.add(Proc(tp, ["--server", "127.0.0.1:0", "--json", "-n", str(events)],
                            name="server"))
        port = server.listening_port()
        client = c.add(Proc(tp, ["-t", str(event_type), "-s", str(BATCH_SIZE),
                                 "-n", str(events), "--json", "127.0.0.1:%d" % port],
                            name="client -t %d" % event_type))
        client.expect_exit(0)
        server.expect_exit(0)
        check_eq(client.summary()["event_type"], event_type, "client event type")
        check_eq(client.summary()["events"], events, "type %d events sent" % event_type)
        check_eq(server.summary()["events"], events, "type %d events received" % event_type)


# broker-node -v prints `received <topic> <value>`; a string value as its characters.
RAW_EVENT = re.compile(r"^received /benchmark/events ((\d+) x+)$")
RAW_EVENTS = 5
RAW_SIZE = 64
RECEIVE_TIMEOUT = 30.0


def type_0_is_a_stamped_64_byte_string(tp, node):
    with Cleanup() as c:
        receiver = c.add(Node(node, ["--listen-address", "127.0.0.1", "-t", "/benchmark/events",
                                     "-v"], "broker-node"))
        port = receiver.port
        before_ns = time.time_ns()
        client = c.add(Proc(tp, ["-t", "0", "-n", str(RAW_EVENTS), "--disable-ssl",
                                 "127.0.0.1:%d" % port], name="client -t 0"))
        client.expect_exit(0)
        after_ns = time.time_ns()
        received = receiver.wait_count(is_received, RAW_EVENTS, RECEIVE_TIMEOUT,
                                       "type-0 events the node printed")
        check_eq(len(received), RAW_EVENTS, "type-0 events the node printed")
        for line in received:
            m = RAW_EVENT.match(line)
            check(m is not None, "a type-0 event is digits, a space and x's: %r" % line)
            check_eq(len(m.group(1)), RAW_SIZE, "length of the type-0 string %r" % m.group(1))
            check(before_ns <= int(m.group(2)) <= after_ns,
                  "the leading digits are the send time in ns: %s not in [%d, %d]"
                  % (m.group(2), before_ns, after_ns))


def every_type_crosses_a_peering(tp, node):
    for event_type, events in sorted(EVENTS.items()):
        one_type(tp, event_type, events)


run_tests([every_type_crosses_a_peering, type_0_is_a_stamped_64_byte_string], limit=150,
          binaries=("broker-throughput", "broker-node"))
