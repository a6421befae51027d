"""ws.no_echo: delivery rules a client observes (spec websocket-v1.md §7.1, §7.3, §7.5).

- a client never receives its own messages, even on a topic it subscribes to;
- a prefix matches raw strings: /test matches /test, /test/x and /testing/x,
  but not /tes or /Test;
- messages from one client arrive in publication order.

"Nothing arrived" is proven without sleeping: after the other client has received the
messages (so the node has routed them), a sentinel from the other side must be the very
next frame the publisher sees.
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

from wsnode import Node, check_eq, data_message, recv, run, subscribe  # noqa: E402


def count_msg(topic, n):
    return json.dumps({"type": "data-message", "topic": topic, "@data-type": "count", "data": n})


async def main(binary):
    with Node(binary) as node:
        port = node.ws_port
        a, _ = await subscribe(port, ["/test"])
        b, _ = await subscribe(port, ["/test"])

        sent = [("/test", 1), ("/testing/x", 2), ("/test/x", 3), ("/tes", 4), ("/Test", 5),
                ("/testing", 6), ("", 7), ("/other/test", 8)]
        for topic, n in sent:
            await a.send(count_msg(topic, n))
        expected = [data_message(t, "count", n) for t, n in sent
                    if t.startswith("/test")]
        got = [await recv(b, what="message %d at b" % i) for i in range(len(expected))]
        check_eq(got, expected, "what b (subscribed to /test) received from a")

        await b.send(count_msg("/test/sentinel", 99))
        check_eq(await recv(a, what="b's sentinel at a"),
                 data_message("/test/sentinel", "count", 99),
                 "the first frame a receives after publishing (its own messages must not "
                 "come back)")

        # The same the other way round, with a long run to check the order.
        for n in range(500):
            await b.send(count_msg("/test/seq", n))
        got = [await recv(a, what="message %d of b's run at a" % n) for n in range(500)]
        check_eq(got, [data_message("/test/seq", "count", n) for n in range(500)],
                 "b's 500 messages at a, in order")
        await a.send(count_msg("/test/sentinel", 100))
        check_eq(await recv(b, what="a's sentinel at b"),
                 data_message("/test/sentinel", "count", 100),
                 "the first frame b receives after its run of 500")

        await a.close()
        await b.close()


run(main, limit=60)
