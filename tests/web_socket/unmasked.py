"""ws.unmasked: unmasked client frames are accepted, as Broker accepts them
(doc/protocol/websocket.md §3).

A raw client that never masks:
- sends its subscriptions and gets the ack;
- publishes with 7-, 16- and 64-bit frame lengths, and a library client subscribed to
  the topic receives each message;
- mixes masked and unmasked frames, and fragments of both kinds in one message;
- pings unmasked and gets its pong; closes unmasked and gets the close echoed.
A client that sends its subscriptions and a message in the same write as the upgrade
request (before the 101 arrived) is served too.
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.checks import check, check_eq, run_tests  # noqa: E402
from brokertest.nodes import Node  # noqa: E402
from brokertest.rawws import (CLOSE, CONT, PING, PONG, TEXT, RawClient,  # noqa: E402
                              close_code, encode_frame)
from brokertest.wsclient import recv_data, subscribe  # noqa: E402

def publish(topic, text):
    return json.dumps({"type": "data-message", "topic": topic, "@data-type": "string",
                       "data": text})


def delivered(topic, text):
    return '{"type":"data-message","topic":"%s","@data-type":"string","data":"%s"}' % (
        topic, text)


async def main(binary):
    with Node(binary, web_socket=True) as node:
        sub, _ = await subscribe(node.ws_port, ["/u"])

        c = RawClient(node.ws_port)
        try:
            c.send_frame(TEXT, '["/none"]', mask=False)
            check(c.recv_text().startswith('{"type":"ack"'), "no ack for unmasked subscriptions")

            # 7-bit, 16-bit and 64-bit lengths, each unmasked.
            for n in [10, 300, 70000]:
                text = "x" * n
                c.send_frame(TEXT, publish("/u/len", text), mask=False)
                check_eq(await recv_data(sub, what="the %d-byte message" % n),
                         delivered("/u/len", text), "what the subscriber got (%d bytes)" % n)

            # Masked and unmasked frames in turn.
            for i in range(6):
                c.send_frame(TEXT, publish("/u/mix", str(i)), mask=i % 2 == 0)
            for i in range(6):
                check_eq(await recv_data(sub), delivered("/u/mix", str(i)), "mixed frame %d" % i)

            # One message in three fragments, unmasked, masked, unmasked, with an unmasked
            # ping between them; all of it in a single write.
            msg = publish("/u/frag", "fragmented")
            parts = [msg[:10], msg[10:20], msg[20:]]
            c.sock.sendall(encode_frame(TEXT, parts[0], fin=False, mask=False)
                           + encode_frame(PING, b"p1", mask=False)
                           + encode_frame(CONT, parts[1], fin=False, mask=True)
                           + encode_frame(CONT, parts[2], fin=True, mask=False))
            check_eq(c.recv_message(), (PONG, b"p1"), "the pong to an unmasked ping")
            check_eq(await recv_data(sub), delivered("/u/frag", "fragmented"),
                     "the reassembled fragmented message")

            c.send_frame(CLOSE, b"\x03\xe8", mask=False)
            opcode, payload = c.recv_message()
            check_eq(opcode, CLOSE, "the answer to an unmasked close frame")
            check_eq(close_code(payload)[0], 1000, "the echoed close code")
        finally:
            c.close()

        # Subscriptions and a message right behind the upgrade request, unmasked.
        early = (encode_frame(TEXT, "[]", mask=False)
                 + encode_frame(TEXT, publish("/u/early", "early"), mask=False))
        e = RawClient(node.ws_port, early=early)
        try:
            check(e.recv_text().startswith('{"type":"ack"'), "no ack for early subscriptions")
            check_eq(await recv_data(sub), delivered("/u/early", "early"),
                     "the message sent before the 101")
        finally:
            e.close()
        await sub.close()


run_tests([main], limit=60)
