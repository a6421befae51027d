"""py.round_trip: every Broker type crosses a real node between brokerclient clients and
comes back as the same Python value and type (count vs integer, enum vs string, set vs
vector, nanosecond timespans, ...).

- A blocking client publishes each value of python/tests' EVERY_TYPE on its own topic; an
  asyncio client and a second blocking client receive it, and a plain `websockets` client
  checks that the node's frame is byte for byte what brokerclient itself encodes.
- The asyncio client publishes all of them in one vector; the blocking client receives it.
- The most deeply nested values brokerclient encodes are accepted by the node (one more
  level is refused locally, with EncodeError).
- A thread iterating a blocking client ends quietly when another thread closes it.
- Values the node changes on purpose come back changed as documented: a timestamp loses its
  sub-millisecond digits, a v4-mapped IPv6 address becomes IPv4.
"""

import asyncio
import datetime
import ipaddress

import harness  # noqa: F401  (the paths of brokertest, brokerclient and test_codec)
from brokertest.checks import check, check_eq, run_tests
from brokertest.nodes import Node
from brokertest.wsclient import in_thread, recv_data, subscribe

import brokerclient
from brokerclient import Count, EncodeError, aio, codec
from test_codec import EVERY_TYPE, nest, same

UTC = datetime.timezone.utc
TIMEOUT = 10


def check_same(got, expected, what):
    check(same(got, expected), "%s:\n  sent:     %r\n  received: %r" % (what, expected, got))


async def test_types(node_bin):
    """every type crosses the node to both clients as the same value, in brokerclient's frame"""
    with Node(node_bin, web_socket=True) as node:
        raw, _ = await subscribe(node.ws_port, ["/types"])
        pub = await in_thread(brokerclient.connect, node.url(), [])
        sub = await in_thread(brokerclient.connect, node.url(), ["/types"])
        # Extra headers go through whichever keyword the websockets release uses.
        async with aio.connect(node.url(), ["/types"],
                               headers={"X-Application-Name": "py.types"}) as asub:
            check_eq(asub.endpoint, sub.endpoint, "the node's endpoint id in both acks")

            for i, value in enumerate(EVERY_TYPE):
                topic = "/types/%d" % i
                await in_thread(pub.publish, topic, value)
                check_same(await asub.get(TIMEOUT), (topic, value), "asyncio client, value %d"
                           % i)
                check_same(await in_thread(sub.get, TIMEOUT), (topic, value),
                           "blocking client, value %d" % i)
                frame = await recv_data(raw, what="the node's frame of value %d" % i)
                check_eq(frame, codec.encode_message(topic, value),
                         "the node's frame of value %d vs brokerclient's encoding" % i)

            everything = tuple(EVERY_TYPE)
            await asub.publish("/types/all", everything)
            check_same(await in_thread(sub.get, TIMEOUT), ("/types/all", everything),
                       "all types in one vector, asyncio to blocking")

            for i, deepest in enumerate([nest(63, Count(1)), nest(63, ()), nest(63, None),
                                         nest(62, {Count(1): "x"})]):
                await in_thread(pub.publish, "/types/deep", deepest)
                check_same(await asub.get(TIMEOUT), ("/types/deep", deepest),
                           "deepest value %d" % i)
                try:
                    await in_thread(pub.publish, "/types/deep", [deepest])
                    raise AssertionError("one level deeper than value %d was encoded" % i)
                except EncodeError:
                    pass

            changed = [
                (datetime.datetime(2022, 4, 10, 7, 0, 0, 123456, tzinfo=UTC),
                 datetime.datetime(2022, 4, 10, 7, 0, 0, 123000, tzinfo=UTC)),
                (ipaddress.ip_address("::ffff:10.0.0.1"), ipaddress.ip_address("10.0.0.1")),
            ]
            for sent, expected in changed:
                await in_thread(pub.publish, "/types/changed", sent)
                check_same(await asub.get(TIMEOUT), ("/types/changed", expected),
                           "%r through the node" % (sent,))
            # The node never echoes a client's own messages.
            try:
                got = await asub.get(0.3)
            except TimeoutError:
                got = None
            check(got is None, "the asyncio client received its own message: %r" % (got,))
        await in_thread(sub.close)
        await in_thread(pub.close)
        await raw.close()


async def test_iteration_ends_on_close(node_bin):
    """a thread iterating a blocking client ends quietly when another thread closes it"""
    with Node(node_bin, web_socket=True) as node:
        pub = await in_thread(brokerclient.connect, node.url(), [])
        sub = await in_thread(brokerclient.connect, node.url(), ["/types"])
        seen = []
        loop = asyncio.get_running_loop()
        consumer = loop.run_in_executor(None, lambda: seen.extend(t for t, _ in sub))
        await in_thread(pub.publish, "/types/iter", 1)
        await in_thread(pub.publish, "/types/iter", 2)
        deadline = loop.time() + TIMEOUT
        while seen.count("/types/iter") < 2 and loop.time() < deadline:
            await asyncio.sleep(0.01)
        await in_thread(sub.close)
        await asyncio.wait_for(consumer, TIMEOUT)
        check_eq(seen, ["/types/iter", "/types/iter"], "what the iterating thread saw")
        await in_thread(pub.close)


run_tests([test_types, test_iteration_ends_on_close], limit=75)
