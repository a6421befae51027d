"""py.reconnect: clients with reconnect=True survive a node restart.

A subscriber (asyncio and blocking) and a publisher are connected when the node is killed
(no close frame) and started again on the same port, and later stopped with SIGTERM (close
1000) and started again. Each time the clients re-dial with back-off and re-subscribe on
their own: messages published after the restart arrive, the ack of the new node is seen
(new endpoint id), and `reconnects` counts the restarts. Messages published while the
node is down are queued (publish() times out when the outbox is full) and sent once the
connection is back (flush() waits for that). Without reconnect=True the same restart
ends the client with ConnectionClosed.
"""

import asyncio
import time

import harness  # noqa: F401  (the paths of brokertest and brokerclient)
from brokertest.checks import TestFailure, check, check_eq, run_tests
from brokertest.nodes import Node
from brokertest.wsclient import in_thread

import brokerclient
from brokerclient import ConnectionClosed, aio

TIMEOUT = 20
FAST = dict(reconnect=True, reconnect_delay=0.05, reconnect_max_delay=0.5)


async def wait_until(pred, what):
    deadline = time.monotonic() + TIMEOUT
    while not pred():
        if time.monotonic() > deadline:
            raise TestFailure("timed out waiting for %s" % what)
        await asyncio.sleep(0.01)


async def publish_until_received(pub, receivers, topic):
    """Publishes a counter until every receiver got a message on `topic` (the receivers
    re-subscribe at their own pace, so early messages may miss some of them)."""
    pending = list(receivers)
    deadline = time.monotonic() + TIMEOUT
    n = 0
    while pending:
        if time.monotonic() > deadline:
            raise TestFailure("%d receivers got nothing on %s after the restart"
                              % (len(pending), topic))
        n += 1
        await in_thread(pub.publish, topic, n, TIMEOUT)
        for get in list(pending):
            try:
                while True:
                    got_topic, _ = await get(0.1)
                    if got_topic == topic:
                        pending.remove(get)
                        break
            except TimeoutError:
                pass


async def test_reconnect(node_bin):
    """clients with reconnect=True come back after the node is SIGKILLed and SIGTERMed

    They re-subscribe on their own; what they publish meanwhile is queued and sent."""
    with Node(node_bin, name="restarted", web_socket=True) as node:
        asub = await aio.connect(node.url(), ["/r"], **FAST)
        bsub = await in_thread(brokerclient.connect, node.url(), ["/r"], **FAST)
        pub = await in_thread(brokerclient.connect, node.url(), [], **FAST)
        plain = await aio.connect(node.url(), ["/r"])
        tiny = await in_thread(brokerclient.connect, node.url(), [], outbox_size=1, **FAST)
        receivers = [asub.get, lambda timeout: in_thread(bsub.get, timeout)]

        await publish_until_received(pub, receivers, "/r/before")
        first_endpoint = asub.endpoint

        # On this thread (processes die with the thread that started them, procs.py), so
        # the clients' event loop waits meanwhile. SIGKILL: the clients see the TCP
        # connection die.
        node.restart()
        await publish_until_received(pub, receivers, "/r/after-kill")
        check(asub.endpoint != first_endpoint, "the ack of the new node was read")
        check(asub.connected and bsub.connected and pub.connected, "connected again")
        check_eq((asub.reconnects, bsub.reconnects, pub.reconnects), (1, 1, 1),
                 "reconnects of (asyncio subscriber, blocking subscriber, publisher)")
        try:
            while True:  # what arrived before the restart, then the end
                topic, _ = await plain.get(TIMEOUT)
                check_eq(topic, "/r/before", "a message to the client without reconnect")
        except ConnectionClosed as e:
            print("without reconnect: %s" % e)

        # SIGTERM: the node closes every client with 1000.
        check_eq(await in_thread(node.stop), 0, "the node's exit status after SIGTERM")
        await wait_until(lambda: not (pub.connected or tiny.connected), "the close noticed")
        # Publishing while the node is down queues (up to outbox_size messages, then
        # publish() waits for room), and flush() waits until the queue went out.
        await in_thread(pub.publish, "/r/during", "queued", TIMEOUT)
        await in_thread(tiny.publish, "/r/during", "fits")
        try:
            await in_thread(tiny.publish, "/r/during", "does not fit", 0.2)
            raise AssertionError("publish to a full outbox did not time out")
        except TimeoutError as e:
            print("full outbox: %s" % e)
        flushed = asyncio.ensure_future(in_thread(pub.flush, TIMEOUT))
        await asyncio.sleep(0.2)
        check(not flushed.done(), "flush() returned while the node was down")
        node.restart()
        await asyncio.wait_for(flushed, TIMEOUT + 5)
        await in_thread(tiny.flush, TIMEOUT)
        await publish_until_received(pub, receivers, "/r/after-stop")
        check_eq((asub.reconnects, bsub.reconnects, pub.reconnects), (2, 2, 2),
                 "reconnects after the second restart")

        await asub.close()
        await plain.close()
        await in_thread(bsub.close)
        await in_thread(pub.close)
        await in_thread(tiny.close)


run_tests([test_reconnect], limit=100)
