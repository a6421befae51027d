#!/usr/bin/env python3
"""System tests: a peering that cannot work says why, once (doc/peering.md, "When a peering
fails").

The most likely first mistakes: TLS on one side and plain TCP on the other (in both
directions), a peering dialed at an HTTP port, an HTTP client at the peering port. Each side
must name what it saw and the option that decides it, and a dial retried every second must
not log every attempt: one line, then a summary per minute.

Usage: mismatch.py <path to broker-node>
"""

import os
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.checks import check, run_tests  # noqa: E402
from brokertest.nodes import Node, peer_uri  # noqa: E402
from brokertest.procs import Cleanup  # noqa: E402

# Attempts a dialer makes (one per second) before the test counts its log lines.
ATTEMPTS_WAIT = 3.5


def dialer(cleanup, binary, port, plain, name="dialer"):
    """A node that only dials `port`, re-dialing every second."""
    return cleanup.add(Node(binary, ["-t", "/t", "--no-listen", "--peers", peer_uri(port),
                                     "--peer-retry", "1"], name, listen=False, plain=plain))


def lines_with(node, text):
    return [l for l in node.err_lines if text in l]


def expect_once(node, text, what):
    """`text` appears in exactly one stderr line of `node`, however often it failed."""
    node.wait_for(lambda l: text in l, what=what, stderr=True)
    time.sleep(ATTEMPTS_WAIT)
    got = lines_with(node, text)
    check(len(got) == 1, "%s: logged once, not per attempt:\n%s" % (what, "\n".join(got)))
    return got[0]


def test_tls_dialer_plain_listener(binary):
    """TLS dials plain: both sides name broker.disable-ssl; the dialer logs it once"""
    with Cleanup() as cleanup:
        listener = cleanup.add(Node(binary, ["-t", "/t"], "plain"))
        tls = dialer(cleanup, binary, listener.port, plain=False)
        line = expect_once(tls, "does not speak TLS", "the TLS dialer's reason")
        check("broker.disable-ssl=false" in line and "both sides must agree" in line,
              "the dialer names its setting: " + line)
        check("still failing" not in "\n".join(tls.err_lines), "no summary within a minute")
        line = listener.wait_for(lambda l: "the peer speaks TLS" in l, what="the listener's",
                                 stderr=True)
        check("broker.disable-ssl=true" in line, "the listener names its setting: " + line)
        check(len(lines_with(listener, "the peer speaks TLS")) == 1,
              "the listener logs a repeating failure once too:\n" + listener.describe())


def test_plain_dialer_tls_listener(binary):
    """plain dials TLS: the dialer suspects TLS, the TLS listener says the peer is plain"""
    with Cleanup() as cleanup:
        listener = cleanup.add(Node(binary, ["-t", "/t"], "tls", plain=False))
        plain = dialer(cleanup, binary, listener.port, plain=True)
        line = expect_once(plain, "does it expect TLS", "the plain dialer's reason")
        check("broker.disable-ssl=true" in line, "the dialer names its setting: " + line)
        line = listener.wait_for(lambda l: "does not speak TLS" in l,
                                 what="the TLS listener's reason", stderr=True)
        check("broker.disable-ssl=false" in line, "the listener names its setting: " + line)


def test_dialing_an_http_port(binary):
    """a peering dialed at the metrics port says it met an HTTP server"""
    with Cleanup() as cleanup:
        server = cleanup.add(Node(binary, ["-t", "/t"], "server", metrics=True))
        client = dialer(cleanup, binary, server.metrics_port, plain=True)
        line = expect_once(client, "answered in HTTP", "the dialer's reason")
        check("HTTP/1.1" in line and "not a peering port" in line, line)


def test_http_client_at_the_peering_port(binary):
    """an HTTP request on the peering port is named as such, plain and TLS"""
    with Cleanup() as cleanup:
        for plain in (True, False):
            node = cleanup.add(Node(binary, ["-t", "/t"], "plain" if plain else "tls",
                                    plain=plain))
            with socket.create_connection(("127.0.0.1", node.port), timeout=10) as sock:
                sock.sendall(b"GET /v1/messages/json HTTP/1.1\r\nHost: x\r\n\r\n")
                try:
                    sock.recv(100)
                except OSError:
                    pass
            line = node.wait_for(lambda l: "an HTTP client connected to the peering port" in l,
                                 what="the node's reason", stderr=True)
            check("broker.web-socket.port" in line, line)
            if plain:
                check('"GET /v1/messages/json HTTP/1.1"' in line, "the request line: " + line)


if __name__ == "__main__":
    run_tests([test_tls_dialer_plain_listener, test_plain_dialer_tls_listener,
               test_dialing_an_http_port, test_http_client_at_the_peering_port], limit=90)
