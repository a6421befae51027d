"""ws.metrics: the Prometheus endpoint counts WebSocket clients and traffic
(doc/metrics.md).

With BROKER_METRICS_PORT set, GET /metrics answers in Prometheus text format:
- broker_connections{type="web-socket"} equals the number of connected clients, and drops
  when one leaves;
- broker_processed_messages_total{type="data"} grows while a client publishes, scrape after
  scrape;
- broker_handler_delivered_messages_total{kind="web_socket"} grows by exactly one per message and
  subscribed client;
- other paths get 404 and other methods 405.
"""

import asyncio
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.checks import check, check_eq, run_tests  # noqa: E402
from brokertest.net import scrape_metrics  # noqa: E402
from brokertest.nodes import Node  # noqa: E402
from brokertest.rawws import http_exchange, parse_http_response  # noqa: E402
from brokertest.wsclient import (count_message, in_thread, poll_metric, recv,  # noqa: E402
                                 subscribe)

CONNECTIONS = 'broker_connections{type="web-socket"}'
PROCESSED = 'broker_processed_messages_total{type="data"}'
DELIVERED = 'broker_handler_delivered_messages_total{kind="web_socket"}'


async def main(binary):
    with Node(binary, web_socket=True, metrics=True) as node:
        port, mport = node.ws_port, node.metrics_port
        check_eq(scrape_metrics(mport)[CONNECTIONS], 0, CONNECTIONS + " before any client")
        subs = [(await subscribe(port, ["/m"]))[0] for _ in range(2)]
        pub, _ = await subscribe(port, [])
        before = scrape_metrics(mport)
        check_eq(before[CONNECTIONS], 3, CONNECTIONS + " with three clients")

        # Exact accounting for a burst of 100 messages to two subscribers.
        for n in range(100):
            await pub.send(count_message("/m/x", n))
        for s in subs:
            for n in range(100):
                await recv(s, what="message %d" % n)
        after = scrape_metrics(mport)
        check_eq(after[DELIVERED] - before[DELIVERED], 200,
                 DELIVERED + " growth for 100 messages to 2 clients")
        check(after[PROCESSED] - before[PROCESSED] >= 100,
              "%s grew by %r for 100 messages" % (PROCESSED, after[PROCESSED] - before[PROCESSED]))

        # While traffic flows, every scrape sees more processed messages than the last.
        stop = asyncio.Event()

        async def publish():
            n = 0
            while not stop.is_set():
                await pub.send(count_message("/m/x", n))
                n += 1
                if n % 20 == 0:
                    await asyncio.sleep(0.01)

        async def drain(s):
            while not stop.is_set():
                try:
                    await asyncio.wait_for(s.recv(), 0.2)
                except asyncio.TimeoutError:
                    pass

        tasks = [asyncio.ensure_future(publish())] + [asyncio.ensure_future(drain(s))
                                                      for s in subs]
        seen = []
        try:
            for _ in range(5):
                await asyncio.sleep(0.2)
                m = await in_thread(scrape_metrics, mport)
                check_eq(m[CONNECTIONS], 3, CONNECTIONS + " during traffic")
                seen.append(m[PROCESSED])
        finally:
            stop.set()
            await asyncio.gather(*tasks)
        check(all(b > a for a, b in zip(seen, seen[1:])),
              "%s did not grow from scrape to scrape during traffic: %r" % (PROCESSED, seen))

        await subs[0].close()
        await poll_metric(mport, CONNECTIONS, lambda v: v == 2,
                          what="the gauge to drop after a client left")

        raw = http_exchange(mport, b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n")
        check_eq(parse_http_response(raw)[0], 404, "status of GET /nope on the metrics port")
        raw = http_exchange(mport, b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        check_eq(parse_http_response(raw)[0], 405, "status of POST /metrics")

        await subs[1].close()
        await pub.close()
        await poll_metric(mport, CONNECTIONS, lambda v: v == 0,
                          what="the gauge to reach 0 after every client left")


run_tests([main], limit=60)
