"""py.reconnect: clients with reconnect=True survive a node restart.

A subscriber (asyncio and blocking) and a publisher are connected when the node is killed
(no close frame) and started again on the same port, and later stopped with SIGTERM (close
1000) and started again. Each time the clients re-dial with back-off and re-subscribe on
their own: messages published after the restart arrive, the ack of the new node is seen
(new endpoint id), and `reconnects` counts the restarts. A publish made while the node is
down waits and completes once the connection is back. Without reconnect=True the same
restart ends the client with ConnectionClosed.
"""

import asyncio
import time

from harness import Node, TestFailure, blocking, check, check_eq, run

import brokerclient  # noqa: E402
from brokerclient import ConnectionClosed, aio

TIMEOUT = 20
FAST = dict(reconnect=True, reconnect_delay=0.05, reconnect_max_delay=0.5)


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
        await blocking(pub.publish, topic, n, TIMEOUT)
        for get in list(pending):
            try:
                while True:
                    got_topic, _ = await get(0.1)
                    if got_topic == topic:
                        pending.remove(get)
                        break
            except TimeoutError:
                pass


async def main(binary):
    with Node(binary, name="restarted") as node:
        asub = await aio.connect(node.url(), ["/r"], **FAST)
        bsub = await blocking(brokerclient.connect, node.url(), ["/r"], **FAST)
        pub = await blocking(brokerclient.connect, node.url(), [], **FAST)
        plain = await aio.connect(node.url(), ["/r"])
        receivers = [asub.get, lambda timeout: blocking(bsub.get, timeout)]

        await publish_until_received(pub, receivers, "/r/before")
        first_endpoint = asub.endpoint

        node.restart()  # SIGKILL: the clients see the TCP connection die
        await publish_until_received(pub, receivers, "/r/after-kill")
        check(asub.endpoint != first_endpoint, "the ack of the new node was read")
        check_eq((asub.reconnects, bsub.reconnects, pub.reconnects), (1, 1, 1),
                 "reconnects of (asyncio subscriber, blocking subscriber, publisher)")
        try:
            while True:  # what arrived before the restart, then the end
                topic, _ = await plain.get(TIMEOUT)
                check_eq(topic, "/r/before", "a message to the client without reconnect")
        except ConnectionClosed as e:
            print("without reconnect: %s" % e)

        node.terminate()  # SIGTERM: the node closes every client with 1000
        waiting = asyncio.ensure_future(blocking(pub.publish, "/r/during", "waited", TIMEOUT))
        await asyncio.sleep(0.2)
        check(not waiting.done() or waiting.exception() is None,
              "a publish while the node is down failed: %r"
              % (waiting.done() and waiting.exception(),))
        node.restart()
        await asyncio.wait_for(waiting, TIMEOUT + 5)
        await publish_until_received(pub, receivers, "/r/after-stop")
        check_eq((asub.reconnects, bsub.reconnects, pub.reconnects), (2, 2, 2),
                 "reconnects after the second restart")

        await asub.close()
        await plain.close()
        await blocking(bsub.close)
        await blocking(pub.close)


run(main, limit=120)
