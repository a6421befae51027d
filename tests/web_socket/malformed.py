"""ws.malformed: protocol errors end the session with the specified frames and codes.

- a first message that is not an array of strings (an object, [1], ["/a", 2], null, invalid
  JSON, empty text) gets the error frame "first message must contain a filter", then close
  1008 (doc/protocol/websocket.md §4.1; Broker left the session hanging);
- a binary first message counts like a text one (Zeek's clients send binary frames; Broker
  dropped TCP): a filter in it gets the ack (ws.zeek_client covers the rest);
- a wrong path gets HTTP 400, text/plain, a body containing "invalid path; try
  /v1/messages/json" and a Content-Length that matches the body exactly (§2);
- a request that is not an upgrade, or lacks Sec-WebSocket-Key, gets 400; a 64 KiB header
  block gets 431 instead of a hang;
- a ping gets a pong with the same payload; a client's close frame is echoed (§3; Broker
  did not echo it).
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.checks import check, check_eq, run_tests  # noqa: E402
from brokertest.nodes import Node  # noqa: E402
from brokertest.rawws import (CLOSE, PING, PONG, RawClient, close_code,  # noqa: E402
                              http_exchange, parse_http_response, upgrade_request)
from brokertest.wsclient import connect, expect_close, recv, subscribe  # noqa: E402

NO_FILTER_WORDS = "first message must contain a filter"  # Broker's; ours adds the cause
BAD_FIRST_MESSAGES = ['{"a":1}', "[1]", '["/a", 2]', "null", '"/a"', "nope", "", "[", "[]]"]


def http_status(port, request, what):
    """Sends `request`, returns (code, headers, body) and checks Content-Length and EOF."""
    raw = http_exchange(port, request)
    code, _, headers, body = parse_http_response(raw)
    lengths = headers.get("content-length")
    check(lengths is not None, "%s: no Content-Length in %r" % (what, raw))
    check_eq(int(lengths[0]), len(body),
             "%s: Content-Length against the bytes sent before the server closed (%r)"
             % (what, raw))
    return code, headers, body


def http_errors(port):
    for path in ["/wrong", "/", "/V1/messages/json", "/v1/messages/json/", "/v1/messages",
                 "/metrics"]:
        what = "an upgrade to %s" % path
        code, headers, body = http_status(port, upgrade_request(path)[0], what)
        check_eq(code, 400, what + ": status")
        check_eq(headers.get("content-type"), ["text/plain"], what + ": Content-Type")
        check(b"invalid path; try /v1/messages/json" in body, "%s: body %r" % (what, body))

    code, _, body = http_status(port, b"GET /v1/messages/json HTTP/1.1\r\nHost: x\r\n\r\n",
                                "a plain GET of the WebSocket path")
    check_eq(code, 400, "a plain GET of the WebSocket path: status")
    code, _, _ = http_status(
        port, b"POST /v1/messages/json HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
        "a POST")
    check_eq(code, 400, "a POST: status")
    code, _, _ = http_status(
        port, b"GET /v1/messages/json HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
        b"Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\r\n",
        "an upgrade without Sec-WebSocket-Key")
    check_eq(code, 400, "an upgrade without Sec-WebSocket-Key: status")
    huge = upgrade_request(extra_headers=[("X-Filler", "f" * 65536)])[0]
    code, _, _ = http_status(port, huge, "an upgrade with a 64 KiB header block")
    check_eq(code, 431, "an upgrade with a 64 KiB header block: status")


def ping_and_close_echo(port):
    c = RawClient(port)
    try:
        c.send_text('["/x"]')
        check(c.recv_text().startswith('{"type":"ack"'), "no ack")
        c.send_frame(PING, b"hello")
        check_eq(c.recv_message(), (PONG, b"hello"), "the answer to ping 'hello'")
        c.send_close(1000, b"bye")
        opcode, payload = c.recv_message()
        check_eq(opcode, CLOSE, "the frame answering the client's close (must echo it)")
        check_eq(close_code(payload)[0], 1000, "the echoed close code")
        check(c.expect_eof(), "the server did not close TCP after the close handshake")
    finally:
        c.close()


async def main(binary):
    with Node(binary, web_socket=True) as node:
        port = node.ws_port
        for text in BAD_FIRST_MESSAGES:
            ws = await connect(port)
            await ws.send(text)
            frame = json.loads(await recv(ws, what="the error frame for first message %r"
                                          % text))
            context = frame["context"]
            check_eq((frame["code"], context.split(": ")[0]),
                     ("deserialization_failed", "first message must contain a filter"),
                     "the answer to first message %r" % text)
            check(len(context) > len(NO_FILTER_WORDS) + 40,
                  "the answer to %r says what came instead: %r" % (text, context))
            await expect_close(ws, 1008, what="the session after first message %r" % text)

        ws = await connect(port)
        await ws.send(b'["/x"]')
        check_eq(json.loads(await recv(ws, what="the ack for a binary filter"))["type"], "ack",
                 "the answer to a binary filter")
        await ws.close()

        ws, _ = await subscribe(port, ["/x"])
        await ws.send(b"\x00\x01binary")
        frame = json.loads(await recv(ws, what="the error frame for binary garbage"))
        check("malformed JSON" in frame["context"], "binary garbage: %r" % frame)
        await ws.close()

        # The node still serves others after all that.
        ok, _ = await subscribe(port, ["/x"])
        await ok.close()

        http_errors(port)
        ping_and_close_echo(port)


run_tests([main], limit=60)
