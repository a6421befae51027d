"""ws.handshake: the HTTP upgrade and the ack (doc/protocol/websocket.md §2, §4.1, §4.2).

- the upgrade answers 101 with the right Sec-WebSocket-Accept and negotiates no extension
  or subprotocol, also when the client offers them; a query string and an 8 KiB header
  block are accepted;
- the first frame after the subscriptions is exactly one compact ack whose keys are
  type, endpoint, version in that order, and whose endpoint is the node's id for every client;
- a `[]` client receives nothing at all, yet may publish;
- duplicate prefixes deliver a message once;
- anything published after a client saw its ack reaches it.
"""

import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.checks import check, check_eq, run_tests  # noqa: E402
from brokertest.nodes import Node  # noqa: E402
from brokertest.rawws import RawClient  # noqa: E402
from brokertest.wsclient import (connect, data_message, expect_silence, recv,  # noqa: E402
                                 recv_data, subscribe)

ACK = re.compile(r'^\{"type":"ack","endpoint":"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-'
                 r'[0-9a-f]{4}-[0-9a-f]{12})","version":"([^"\\]+)"\}$')


def check_upgrade_headers(c, what):
    check("sec-websocket-extensions" not in c.headers,
          "%s: the server negotiated an extension: %r" % (what, c.response))
    check("sec-websocket-protocol" not in c.headers,
          "%s: the server picked a subprotocol: %r" % (what, c.response))
    check_eq(c.headers.get("upgrade", [""])[0].lower(), "websocket", what + ": Upgrade header")
    check_eq(c.headers.get("connection", [""])[0].lower(), "upgrade", what + ": Connection header")


def raw_upgrades(port):
    c = RawClient(port)
    check_upgrade_headers(c, "a plain upgrade")
    c.close()
    offered = [("Sec-WebSocket-Protocol", "chat, superchat"),
               ("Sec-WebSocket-Extensions", "permessage-deflate; client_max_window_bits")]
    c = RawClient(port, extra_headers=offered)
    check_upgrade_headers(c, "an upgrade offering a subprotocol and permessage-deflate")
    c.close()
    c = RawClient(port, path="/v1/messages/json?x=1&y")
    check_upgrade_headers(c, "an upgrade with a query string")
    c.send_text('["/q"]')
    check(ACK.match(c.recv_text()), "no ack after an upgrade with a query string")
    c.close()
    c = RawClient(port, extra_headers=[("Cookie", "session=" + "c" * 8000)])
    check_upgrade_headers(c, "an upgrade with an 8 KiB cookie")
    c.close()


async def main(binary):
    with Node(binary, web_socket=True) as node:
        port = node.ws_port
        raw_upgrades(port)

        # websockets offers permessage-deflate by default; the server must decline.
        ws = await connect(port)
        check("Sec-WebSocket-Extensions" not in ws.response_headers,
              "extension negotiated with websockets: %r" % dict(ws.response_headers))
        await ws.send('["/test"]')
        ack = await recv(ws, what="the ack")
        m = ACK.match(ack)
        check(m, "the ack is not compact {type, endpoint, version} in order: %r" % ack)
        check(list(json.loads(ack)) == ["type", "endpoint", "version"], "ack key order: " + ack)
        check(re.match(r"^\d+\.\d+\.\d+", m.group(2)), "version not MAJOR.MINOR.PATCH: " + ack)
        node_id = m.group(1)

        # One ack per client, and the same endpoint (the node's, not a per-client id).
        pub, ack2 = await subscribe(port, [])
        check_eq(ACK.match(ack2).group(1), node_id, "endpoint in a second client's ack")
        all_, _ = await subscribe(port, [""])
        dup, _ = await subscribe(port, ["/a", "/b", "/a", "/a/x"])
        await expect_silence(pub, 0.3, "a [] client right after its ack")

        # A [] client publishes but receives nothing, not even status events or its own data.
        sent = [("/test", 1), ("/other", 2), ("/a/1", 3), ("/b/1", 4), ("/a/x/1", 5)]
        for topic, n in sent:
            await pub.send(json.dumps({"type": "data-message", "topic": topic,
                                       "@data-type": "count", "data": n}))
        got = [await recv_data(all_, what="message %d at the [\"\"] client" % i)
               for i in range(len(sent))]
        check_eq(got, [data_message(t, "count", n) for t, n in sent],
                 "what a [\"\"] client received from the [] client")
        check_eq(await recv(ws, what="/test at the /test client"), data_message("/test", "count", 1),
                 "what the /test client received")
        # Overlapping and duplicate prefixes deliver each message once, in order.
        got = [await recv(dup, what="a message at the /a,/b client") for _ in range(3)]
        check_eq(got, [data_message("/a/1", "count", 3), data_message("/b/1", "count", 4),
                       data_message("/a/x/1", "count", 5)],
                 "what the client subscribed to /a, /b, /a, /a/x received")
        await expect_silence(dup, 0.3, "the /a,/b client after its three messages")
        await expect_silence(pub, 0.3, "the [] client")

        # The subscription is active before the ack (§4.2; Broker raced): a message published the
        # moment a new client has its ack must reach it. Repeat to give a race a chance.
        for i in range(20):
            late, _ = await subscribe(port, ["/late"])
            await pub.send(json.dumps({"topic": "/late", "@data-type": "count", "data": i}))
            check_eq(await recv(late, what="the message published right after the ack"),
                     data_message("/late", "count", i), "round %d after the ack" % i)
            await late.close()

        for c in (ws, pub, all_, dup):
            await c.close()


run_tests([main], limit=60)
