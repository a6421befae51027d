"""ws.shutdown: a node that gets SIGTERM closes every WebSocket client with code 1000
(a normal close) instead of dropping the connections (which clients see as 1006).

Two library clients (one subscribed, one publish-only) and a raw client are connected when
the node gets SIGTERM. Each receives a close frame with 1000; the library clients finish the
close handshake normally; the node exits with status 0.
"""

import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.checks import check, check_eq, run_tests  # noqa: E402
from brokertest.nodes import Node  # noqa: E402
from brokertest.rawws import CLOSE, RawClient, close_code  # noqa: E402
from brokertest.wsclient import expect_close, in_thread, subscribe  # noqa: E402


async def main(binary):
    with Node(binary, ["-t", "/t"], web_socket=True) as node:
        sub, _ = await subscribe(node.ws_port, ["/t"])
        pub, _ = await subscribe(node.ws_port, [])
        raw = RawClient(node.ws_port)
        try:
            raw.send_text('["/t"]')
            check(raw.recv_text().startswith('{"type":"ack"'), "no ack for the raw client")

            node.send_signal(signal.SIGTERM)
            await expect_close(sub, 1000, what="the subscribed client")
            await expect_close(pub, 1000, what="the publish-only client")
            check(sub.close_rcvd is not None and sub.close_sent is not None,
                  "the subscribed client's close handshake did not complete")

            opcode, payload = await in_thread(raw.recv_message)
            check_eq(opcode, CLOSE, "the raw client's frame after SIGTERM")
            check_eq(close_code(payload)[0], 1000, "the raw client's close code")
        finally:
            raw.close()
        status = await in_thread(node.wait_exit)
        check_eq(status, 0, "the node's exit status after SIGTERM")


run_tests([main], limit=60)
