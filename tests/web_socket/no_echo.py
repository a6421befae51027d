"""ws.no_echo: delivery rules a client observes (doc/protocol/websocket.md §7).

- a client never receives its own messages, even on a topic it subscribes to;
- a prefix matches raw strings: /test matches /test, /test/x and /testing/x,
  but not /tes or /Test;
- messages from one client arrive in publication order.

"Nothing arrived" is proven without sleeping: after the other client has received the
messages (so the node has routed them), a sentinel from the other side must be the very
next frame the publisher sees.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.checks import check_eq, run_tests  # noqa: E402
from brokertest.nodes import Node  # noqa: E402
from brokertest.wsclient import (check_delivery, check_run, count_message,  # noqa: E402
                                 data_message, recv, subscribe)


async def main(binary):
    with Node(binary, web_socket=True) as node:
        port = node.ws_port
        a, _ = await subscribe(port, ["/test"])
        b, _ = await subscribe(port, ["/test"])

        sent = [("/test", 1), ("/testing/x", 2), ("/test/x", 3), ("/tes", 4), ("/Test", 5),
                ("/testing", 6), ("", 7), ("/other/test", 8)]
        for topic, n in sent:
            await a.send(count_message(topic, n))
        expected = [data_message(t, "count", n) for t, n in sent
                    if t.startswith("/test")]
        got = [await recv(b, what="message %d at b" % i) for i in range(len(expected))]
        check_eq(got, expected, "what b (subscribed to /test) received from a")

        await check_delivery(b, a, "/test/sentinel", 99,
                             "b's sentinel, the first frame a receives after publishing (its "
                             "own messages must not come back)")

        # The same the other way round, with a long run to check the order.
        await check_run(b, a, "/test/seq", 500, "b's 500 messages at a")
        await check_delivery(a, b, "/test/sentinel", 100,
                             "a's sentinel, the first frame b receives after its run of 500")

        await a.close()
        await b.close()


run_tests([main], limit=60)
