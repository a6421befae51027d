#!/usr/bin/env python3
"""System tests: hostile but well-formed WebSocket input against a real node.

- A client subscribing to 100 000 topics (about 1.9 MB, within every limit) is attached at
  once, and other clients and /metrics keep being served meanwhile; one topic more than
  broker.web-socket.max-subscriptions gets a limit_exceeded error frame naming the option
  and close 1008, counted in broker_handler_limit_disconnects_total.
- Close codes outside the registry (5000, 65535, 1005) are answered with 1002, not echoed.
- An upgrade with an empty, malformed or wrong-length Sec-WebSocket-Key gets 400.

Usage: hostile.py <path to broker-node>
"""

import json
import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.checks import check, check_eq, run_tests  # noqa: E402
from brokertest.net import scrape_metrics, wait_metric  # noqa: E402
from brokertest.nodes import Node  # noqa: E402
from brokertest.procs import Cleanup  # noqa: E402
from brokertest.rawws import (CLOSE, TEXT, RawClient, close_code, encode_frame,  # noqa: E402
                              http_exchange, parse_http_response)
from brokertest.wsclient import count_message, data_message  # noqa: E402

MANY = 100000
LIMIT_WS = 'broker_handler_limit_disconnects_total{kind="web_socket"}'


def acked(port, topics):
    c = RawClient(port)
    c.send_text(json.dumps(topics))
    check(c.recv_text().startswith('{"type":"ack"'), "ack")
    return c


def test_many_subscriptions(binary):
    """100 000 subscriptions are attached at once; others keep being served"""
    with Cleanup() as c:
        node = c.add(Node(binary, [], web_socket=True, metrics=True))
        live_sub = acked(node.ws_port, ["/live"])
        pub = acked(node.ws_port, [])
        big = RawClient(node.ws_port, timeout=60)
        started = time.monotonic()
        big.send_text(json.dumps(["/many/topic-%06d" % i for i in range(MANY)]))
        pub.sock.sendall(encode_frame(TEXT, count_message("/live/x", 1)))
        check_eq(live_sub.recv_text(), data_message("/live/x", "count", 1), "a live delivery")
        scrape_metrics(node.metrics_port)
        check(big.recv_text().startswith('{"type":"ack"'), "the big client's ack")
        print("ack for %d subscriptions after %.2f s" % (MANY, time.monotonic() - started))
        pub.sock.sendall(encode_frame(TEXT, count_message("/many/topic-012345", 2)))
        check_eq(big.recv_text(), data_message("/many/topic-012345", "count", 2),
                 "a message on one of the 100 000 topics")
        for x in (live_sub, pub, big):
            x.close()


def test_too_many_subscriptions(binary):
    """one subscription over the budget: error frame naming it, close 1008, counted"""
    with Cleanup() as c:
        node = c.add(Node(binary, ["--broker.web-socket.max-subscriptions=100"],
                          web_socket=True, metrics=True))
        client = RawClient(node.ws_port)
        client.send_text(json.dumps(["/t%d" % i for i in range(101)]))
        err = json.loads(client.recv_text())
        check_eq(err["type"], "error", "the answer's type")
        check_eq(err["code"], "limit_exceeded", "the error code")
        check("broker.web-socket.max-subscriptions=100" in err["context"],
              "the context names the option: %r" % err["context"])
        opcode, payload = client.recv_message()
        check_eq((opcode, close_code(payload)[0]), (CLOSE, 1008), "the close frame")
        wait_metric(node.metrics_port, LIMIT_WS, lambda v: v == 1)
        acked(node.ws_port, ["/t%d" % i for i in range(100)]).close()


def test_invalid_close_codes(binary):
    """close codes outside the registry are answered with 1002"""
    with Cleanup() as c:
        node = c.add(Node(binary, [], web_socket=True))
        for code in (5000, 65535, 1005, 999):
            client = acked(node.ws_port, [])
            client.sock.sendall(encode_frame(CLOSE, struct.pack("!H", code) + b"x"))
            opcode, payload = client.recv_message()
            check_eq((opcode, close_code(payload)[0]), (CLOSE, 1002),
                     "the answer to close code %d" % code)
            check(client.expect_eof(), "TCP closed after close code %d" % code)
            client.close()


def request_with_key(key):
    """An upgrade request whose Sec-WebSocket-Key line holds exactly `key`."""
    return ("GET /v1/messages/json HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
            "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13"
            "\r\n\r\n" % key).encode()


def test_invalid_keys(binary):
    """an empty, malformed or wrong-length Sec-WebSocket-Key gets 400, no upgrade"""
    with Cleanup() as c:
        node = c.add(Node(binary, [], web_socket=True))
        for key in ("", "not base64!!", "AAAA", "A" * 28, "A" * 23 + "=", "%%%%" * 5 + "AA=="):
            raw = http_exchange(node.ws_port, request_with_key(key))
            code, _, _, body = parse_http_response(raw)
            check_eq(code, 400, "the answer to Sec-WebSocket-Key %r" % key)
            check(b"Sec-WebSocket-Key" in body, "the body names the header: %r" % body)
        with socket.create_connection(("127.0.0.1", node.ws_port), timeout=10) as sock:
            sock.sendall(request_with_key("dGhlIHNhbXBsZSBub25jZQ=="))
            answer = b""
            while b"\r\n\r\n" not in answer:
                answer += sock.recv(4096)
        code, _, headers, _ = parse_http_response(answer)
        check_eq(code, 101, "the answer to the RFC's sample key")
        check_eq(headers.get("sec-websocket-accept"), ["s3pPLMBiTxaQ9kYGzzhZRbK+xOo="],
                 "the RFC's sample accept value")


run_tests([test_many_subscriptions, test_too_many_subscriptions, test_invalid_close_codes,
           test_invalid_keys], limit=100)
