"""ws.relay: WebSocket clients on two peered nodes reach each other
(doc/protocol/websocket.md §7).

Node B dials node A (`--peers tcp://127.0.0.1:<A's peering port>`). Neither node subscribes
to anything itself, so a message can only cross the peering because the nodes announce
their WebSocket clients' prefixes to each other (ours do, Broker's do not).

- a client on A subscribed to /x receives what a client on B publishes on /x/1, and the
  other way round for /y;
- the §10.2 all-types message crosses the binary peering and arrives as the exact frame;
- a client's message that reaches the other node is not sent back to it;
- messages from one client arrive in order across the hop;
- when the last client subscribed to a prefix leaves, the node withdraws the prefix and
  its peer stops forwarding that traffic.
"""

import asyncio
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.checks import TestFailure, check_eq, run_tests  # noqa: E402
from brokertest.net import scrape_metrics  # noqa: E402
from brokertest.nodes import Node, peer_uri  # noqa: E402
from brokertest.wsclient import (check_delivery, check_run, count_message,  # noqa: E402
                                 data_message, in_thread, poll_metric, recv, subscribe)
from spec_vectors import ALL_TYPES_FRAME, ALL_TYPES_INPUT  # noqa: E402

PROPAGATION_TIMEOUT = 10.0
TO_PEERS = 'broker_handler_delivered_messages_total{kind="peer"}'
CONNECTIONS = 'broker_connections{type="web-socket"}'


async def until_routed(sender, receiver, prefix):
    """Publishes probes on `prefix`/probe until `receiver` gets one, i.e. until the nodes
    have exchanged the receiver's subscription; then drains the probes still in flight."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + PROPAGATION_TIMEOUT
    n = 0
    while True:
        await sender.send(count_message(prefix + "/probe", n))
        n += 1
        try:
            await asyncio.wait_for(receiver.recv(), 0.1)
            break
        except asyncio.TimeoutError:
            if loop.time() > deadline:
                raise TestFailure("%s never reached the other node's client within %.0f s"
                                  % (prefix, PROPAGATION_TIMEOUT))
    await sender.send(count_message(prefix + "/probe-end", 0))
    while (await recv(receiver, what="the end of the probes")) != data_message(
            prefix + "/probe-end", "count", 0):
        pass


async def withdrawn_after_close(a, b, on_a, pub_b):
    """When A's only /x client leaves, A withdraws /x: B stops sending /x to A.

    B's client publishes /x/probe, then /z/sentinel for a client on A. Once the sentinel
    is in, B has routed both; B's count of messages handed to peers then grew by 1 (the
    sentinel) if B no longer forwards /x to A, and by 2 if it still does."""
    z, _ = await subscribe(a.ws_port, ["/z"])
    await until_routed(pub_b, z, "/z")
    clients = scrape_metrics(a.metrics_port)[CONNECTIONS]
    await on_a.close()
    await poll_metric(a.metrics_port, CONNECTIONS, lambda v: v == clients - 1,
                      what="A to remove its /x client")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + PROPAGATION_TIMEOUT
    n = 0
    while True:
        before = (await in_thread(scrape_metrics, b.metrics_port))[TO_PEERS]
        await pub_b.send(count_message("/x/probe", n))
        await pub_b.send(count_message("/z/sentinel", n))
        check_eq(await recv(z, what="sentinel %d" % n), data_message("/z/sentinel", "count", n),
                 "the sentinel at A's /z client")
        after = (await in_thread(scrape_metrics, b.metrics_port))[TO_PEERS]
        if after - before == 1:
            break
        if loop.time() > deadline:
            raise TestFailure("%.0f s after A's only /x client left, B still forwards /x to A "
                              "(%s at B grew by %r for one /x and one /z message)"
                              % (PROPAGATION_TIMEOUT, TO_PEERS, after - before))
        n += 1
        await asyncio.sleep(0.1)
    await z.close()


async def main(binary):
    with Node(binary, ["-v"], "A", web_socket=True, metrics=True) as a:
        with Node(binary, ["-v", "--peers", peer_uri(a.port)], "B", web_socket=True,
                  metrics=True) as b:
            for node in (a, b):
                node.wait_for(lambda l: l.startswith("status peer_added"),
                              what="the peering between A and B")
            on_a, _ = await subscribe(a.ws_port, ["/x", "/test"])
            pub_b, _ = await subscribe(b.ws_port, [])
            await until_routed(pub_b, on_a, "/x")

            await check_delivery(pub_b, on_a, "/x/1", 1, "B's client's message at A's client")
            await pub_b.send(ALL_TYPES_INPUT)
            check_eq(await recv(on_a, what="the all-types message from B"), ALL_TYPES_FRAME,
                     "the §12.1 frame after crossing the peering")
            await check_run(pub_b, on_a, "/x/seq", 300, "a run of 300 messages across the peering")

            # The other direction, and no echo over the peering: A's client publishes on /x,
            # which B forwards to its own /x client but never back to A.
            on_b, _ = await subscribe(b.ws_port, ["/y", "/x"])
            pub_a, _ = await subscribe(a.ws_port, [])
            await until_routed(pub_a, on_b, "/y")
            await check_delivery(pub_a, on_b, "/y/1", 2, "A's client's message at B's client")
            await until_routed(on_a, on_b, "/x")
            await check_delivery(on_a, on_b, "/x/from-a", 3, "A's client's message at B")
            await check_delivery(pub_b, on_a, "/x/sentinel", 4,
                                 "B's sentinel, the next frame at A's client after its own "
                                 "message went to B (it must not come back)")

            await withdrawn_after_close(a, b, on_a, pub_b)
            for c in (pub_b, on_b, pub_a):
                await c.close()


run_tests([main], limit=60)
