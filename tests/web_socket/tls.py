"""ws.tls: wss:// with mutual TLS, configured exactly like TLS peering (doc/protocol/websocket.md
§1 and §10.4, Broker's btest web-socket/encrypted.py).

The node gets a certificate, a key encrypted with a passphrase and the CA
(tests/web_socket/certs, made by make-certs.sh). Then:
- a Python `websockets` client with a certificate from that CA sends ten counts, and a
  second one receives the ten frames of §10.4 byte for byte;
- a client without a certificate, one whose certificate another CA signed, and a plain
  ws:// client are all refused (and the node logs why); the plain client gets a plain-text
  HTTP 400 that says the port speaks TLS (so does a plain http:// request);
- on SIGTERM the connected client gets close 1000 over TLS.
"""

import asyncio
import json
import os
import signal
import ssl
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lib"))

from brokertest.checks import TestFailure, check, check_eq, run_tests  # noqa: E402
from brokertest.nodes import NODE_TLS, Node, cert  # noqa: E402
from brokertest.rawws import http_exchange, parse_http_response, upgrade_request  # noqa: E402
from brokertest.wsclient import expect_close, in_thread, recv, subscribe  # noqa: E402

TEN_COUNTS = ['{"type":"data-message","topic":"/test","@data-type":"count","data":%d}' % n
              for n in range(1, 11)]


def client_context(leaf=None):
    """Trusts the test CA (and checks the node's name, 127.0.0.1); presents `leaf`'s
    certificate if given."""
    ctx = ssl.create_default_context(cafile=cert("ca.pem"))
    if leaf:
        ctx.load_cert_chain(cert(leaf + ".pem"), cert(leaf + ".key"))
    return ctx


async def expect_refused(port, what, **kwargs):
    """Fails unless connecting and sending the subscriptions fails (not by a timeout)."""
    try:
        ws, ack = await subscribe(port, ["/test"], **kwargs)
    except TestFailure as e:
        if "timed out" in str(e):
            raise TestFailure("%s: timed out instead of being refused" % what)
        raise
    except asyncio.TimeoutError:
        raise TestFailure("%s: timed out instead of being refused" % what)
    except Exception as e:  # ssl.SSLError, OSError, websockets' InvalidMessage, ...
        print("%s: refused (%r)" % (what, e))
        return
    await ws.close()
    raise TestFailure("%s was accepted: %r" % (what, ack))


async def main(binary):
    with Node(binary, web_socket=True, tls=NODE_TLS) as node:
        check(node.url().startswith("wss://"), "the node's URL: %s" % node.url())
        ctx = client_context("client")
        recv_ws, _ = await subscribe(node.ws_port, ["/test"], ssl=ctx)
        send_ws, _ = await subscribe(node.ws_port, [], ssl=ctx)
        for n in range(1, 11):
            await send_ws.send(json.dumps({"type": "data-message", "topic": "/test",
                                           "@data-type": "count", "data": n}))
        got = [await recv(recv_ws, what="count %d" % n) for n in range(1, 11)]
        check_eq(got, TEN_COUNTS, "the frames the receiver got (spec §12.3)")
        await send_ws.close()

        await expect_refused(node.ws_port, "a client without a certificate",
                             ssl=client_context())
        await expect_refused(node.ws_port, "a client whose certificate another CA signed",
                             ssl=client_context("intruder"))
        await expect_refused(node.ws_port, "a plain ws:// client")
        # Plain HTTP on the TLS port: a readable 400, not a TLS alert or silence.
        raw = await in_thread(http_exchange, node.ws_port,
                              upgrade_request(extra_headers=[("X-Application-Name", "p")])[0])
        code, _, headers, body = parse_http_response(raw)
        check_eq(code, 400, "plain HTTP on the TLS port")
        check("speaks TLS" in body.decode() and "wss://" in body.decode(),
              "the 400 says why: %r" % body)
        check_eq(int(headers["content-length"][0]), len(body), "Content-Length of the 400")
        node.wait_for(lambda l: "plain HTTP from" in l and "TLS port" in l, stderr=True,
                      what="the log line for plain HTTP on the TLS port")
        for reason in ["peer did not return a certificate", "certificate verify failed"]:
            node.wait_for(lambda l, r=reason: "TLS handshake with" in l and r in l, stderr=True,
                          what="the log line for a refused client (%s)" % reason)

        node.send_signal(signal.SIGTERM)
        await expect_close(recv_ws, 1000, what="the wss:// client at shutdown")
        status = await in_thread(node.wait_exit)
        check_eq(status, 0, "the node's exit status after SIGTERM")


run_tests([main], limit=60)
