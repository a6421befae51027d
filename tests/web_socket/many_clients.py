"""ws.many_clients: 1000 concurrent clients each receive one broadcast.

1000 websockets clients connect (at most 100 handshakes in flight), subscribe to /bcast and
stay connected; the node reports 1001 WebSocket connections (with the publisher); each of
two messages published by another client reaches every one of them, exactly once; afterwards
the gauge returns to 0. The file-descriptor limit is raised first (the node inherits it);
if the hard limit is too low, the test is skipped (exit code 77).
"""

import asyncio
import os
import resource
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.checks import Skip, check_eq, run_tests  # noqa: E402
from brokertest.net import scrape_metrics  # noqa: E402
from brokertest.nodes import Node  # noqa: E402
from brokertest.wsclient import data_message, poll_metric, recv, subscribe  # noqa: E402

CLIENTS = 1000
IN_FLIGHT = 100
FDS_NEEDED = 2 * CLIENTS + 200  # our sockets plus the node's, which inherits the limit
CONNECTIONS = 'broker_connections{type="web-socket"}'


def raise_fd_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= FDS_NEEDED:
        return
    if hard != resource.RLIM_INFINITY and hard < FDS_NEEDED:
        raise Skip("the hard file-descriptor limit is %d, need %d" % (hard, FDS_NEEDED))
    resource.setrlimit(resource.RLIMIT_NOFILE, (FDS_NEEDED, hard))


async def main(binary):
    raise_fd_limit()
    with Node(binary, web_socket=True, metrics=True) as node:
        port = node.ws_port
        gate = asyncio.Semaphore(IN_FLIGHT)

        async def join(i):
            async with gate:
                ws, _ = await subscribe(port, ["/bcast"], open_timeout=30)
                return ws

        start = time.monotonic()
        clients = await asyncio.gather(*(join(i) for i in range(CLIENTS)))
        print("%d clients connected in %.1f s" % (CLIENTS, time.monotonic() - start))
        pub, _ = await subscribe(port, [])
        check_eq(scrape_metrics(node.metrics_port)[CONNECTIONS], CLIENTS + 1,
                 CONNECTIONS + " with every client connected")

        # A second broadcast must be each client's next frame: the first came exactly once.
        for n in (1, 2):
            await pub.send('{"type":"data-message","topic":"/bcast","@data-type":"count",'
                           '"data":%d}' % n)
            expected = data_message("/bcast", "count", n)
            got = await asyncio.gather(*(recv(ws, timeout=30, what="broadcast %d at client %d"
                                              % (n, i)) for i, ws in enumerate(clients)))
            wrong = [(i, text) for i, text in enumerate(got) if text != expected]
            check_eq(wrong[:5], [], "clients whose next frame was not %r" % expected)

        async def leave(ws):
            async with gate:
                await ws.close()

        await asyncio.gather(*(leave(ws) for ws in clients + [pub]))
        await poll_metric(node.metrics_port, CONNECTIONS, lambda v: v == 0, timeout=20,
                          what="every client to be gone")


run_tests([main], limit=90)
