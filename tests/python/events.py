"""py.events: Zeek events (doc/protocol/websocket.md §10.7) with typed arguments and metadata
cross a node between brokerclient clients, Zeek-shaped frames from other clients decode
to Events, and ours are byte for byte what Zeek sends.

The events `broker-throughput --web-socket -t 1` publishes are received as Events too.

Usage: events.py <broker-node> <broker-throughput>
"""

import datetime
import ipaddress
import json
import os

from harness import UNIT_TESTS
from brokertest.checks import check, check_eq, run_tests
from brokertest.net import addr
from brokertest.nodes import Node
from brokertest.procs import run_once
from brokertest.wsclient import in_thread, recv_data, subscribe

import brokerclient
from brokerclient import Count, Enum, Event, Port, aio, codec
from brokerclient.zeek import NETWORK_TIMESTAMP, USER_METADATA_START
from test_codec import same

UTC = datetime.timezone.utc
TIMEOUT = 10
THROUGHPUT_EVENTS = 5
THROUGHPUT_TIMEOUT = 60

with open(os.path.join(UNIT_TESTS, "spec_vectors.json"), encoding="utf-8") as f:
    SPEC_EVENT = json.load(f)["11 zeek event"]


def check_event(got, topic, expected, what):
    check(isinstance(got[1], Event), "%s: not decoded as an Event: %r" % (what, got))
    check_eq(got[0], topic, "%s: topic" % what)
    for field in ("name", "args", "metadata"):
        check(same(getattr(got[1], field), getattr(expected, field)),
              "%s: %s differs:\n  sent:     %r\n  received: %r"
              % (what, field, getattr(expected, field), getattr(got[1], field)))


async def test_events(node_bin, tp_bin):
    """typed Zeek events with metadata cross the node; our frames are Zeek's byte for byte"""
    with Node(node_bin, web_socket=True) as node:
        raw, _ = await subscribe(node.ws_port, ["/zeek"])
        pub = await in_thread(brokerclient.connect, node.url(), [])
        async with aio.connect(node.url(), ["/zeek"]) as asub, \
                aio.connect(node.url(), ["/zeek"], decode_events=False) as plain:
            sub = await in_thread(brokerclient.connect, node.url(), ["/zeek"])

            # Typed arguments and metadata, blocking to asyncio.
            seen = Event("Intel::seen", [
                ipaddress.ip_address("192.168.1.7"), Port(443, "tcp"), Count(3),
                Enum("Intel::ADDR"), datetime.timedelta(milliseconds=250),
                {"source-a", "source-b"}, {"tag": (1, "x")}, None, -5, 0.5],
                metadata={NETWORK_TIMESTAMP: datetime.datetime(2023, 4, 18, 14, 13, 14,
                                                               tzinfo=UTC),
                          USER_METADATA_START: "custom"})
            await in_thread(pub.publish, "/zeek/intel", seen)
            check_event(await asub.get(TIMEOUT), "/zeek/intel", seen, "typed event")
            got = await in_thread(sub.get, TIMEOUT)
            check_event(got, "/zeek/intel", seen, "typed event, blocking receiver")
            check_eq(got[1].network_timestamp, seen.network_timestamp, "network timestamp")
            topic, value = await plain.get(TIMEOUT)
            check(isinstance(value, tuple) and value[:2] == (1, 1),
                  "decode_events=False gives the plain vector: %r" % (value,))
            await recv_data(raw, what="the typed event at the raw client")

            # The example event of doc/protocol/websocket.md §10.7: ours is byte for byte Zeek's
            # frame, and Zeek's decodes.
            ping = Event("event_1", [42, "test"])
            await raw.send(SPEC_EVENT.replace('"topic":"/foo/bar"', '"topic":"/zeek/ping"'))
            check_event(await in_thread(sub.get, TIMEOUT), "/zeek/ping", ping,
                        "the spec's frame sent by a plain WebSocket client")
            check_event(await asub.get(TIMEOUT), "/zeek/ping", ping, "the spec's frame")
            await in_thread(pub.publish, "/zeek/ping", ping)
            frame = await recv_data(raw, what="brokerclient's event at the raw client")
            check_eq(frame, SPEC_EVENT.replace('"topic":"/foo/bar"', '"topic":"/zeek/ping"'),
                     "brokerclient's event frame vs the spec's (§11)")
            check_event(await asub.get(TIMEOUT), "/zeek/ping", ping, "brokerclient's event")
            check_event(await in_thread(sub.get, TIMEOUT), "/zeek/ping", ping,
                        "brokerclient's event, blocking receiver")

            # An event without arguments and with empty metadata keeps its shape.
            bare = Event("bare", [], metadata={})
            await asub.publish("/zeek/bare", bare)
            check_event(await in_thread(sub.get, TIMEOUT), "/zeek/bare", bare, "bare event")
            check_eq(codec.encode_message("/zeek/bare", bare),
                     await recv_data(raw, what="the bare event"), "bare event frame")

            await in_thread(sub.close)
        await in_thread(pub.close)
        await raw.close()


async def test_broker_throughput_events(node_bin, tp_bin):
    """the events broker-throughput --web-socket publishes arrive as Events"""
    with Node(node_bin, web_socket=True) as node:
        async with aio.connect(node.url(), ["/benchmark/events"]) as asub:
            code, _, err = await in_thread(run_once, tp_bin, [
                "--web-socket", "-t", "1", "-n", str(THROUGHPUT_EVENTS), addr(node.ws_port)],
                timeout=THROUGHPUT_TIMEOUT)
            check_eq(code, 0, "broker-throughput's exit status (stderr: %s)" % err[-500:])
            for i in range(THROUGHPUT_EVENTS):
                topic, value = await asub.get(TIMEOUT)
                check_eq(topic, "/benchmark/events",
                         "topic of broker-throughput's event %d" % i)
                check(isinstance(value, Event),
                      "broker-throughput's event %d: %r" % (i, value))
                check(same((value.name, value.args), ("event_1", [42, "test"])),
                      "broker-throughput's event %d: %r" % (i, value))


run_tests([test_events, test_broker_throughput_events], limit=75,
          binaries=("broker-node", "broker-throughput"))
