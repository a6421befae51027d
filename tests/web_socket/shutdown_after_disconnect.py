"""ws.shutdown_after_disconnect: SIGTERM right after thousands of WebSocket clients left ends
the node.

doc/performance.md ("Fan-out") recorded a node that never exited after SIGTERM when
thousands of clients had disconnected a moment before: their removals were still on their
way through the core while the I/O threads shut down. Each round here connects CLIENTS
clients (raw RFC 6455 over asyncio streams, subscribed to /bye), has a publisher send one
message that every client must receive, then floods them: they read nothing more and have
small receive windows, so each leaves with a full output queue in the node (policy
drop_oldest keeps them connected), and the core is busy routing. Then it drops them all at
once (a third with a close frame, a third with a plain TCP close, a third with a reset),
sends SIGTERM at once and requires exit status 0 within EXIT_BOUND seconds. A node that
stays up is backtraced with gdb (when present) before it is killed, and the test fails.
The file-descriptor limit is raised first (the node inherits it); if the hard limit is too
low, the test is skipped.
"""

import asyncio
import os
import resource
import shutil
import signal
import socket
import struct
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.checks import Skip, TestFailure, check, check_eq, run_tests  # noqa: E402
from brokertest.net import LOCALHOST  # noqa: E402
from brokertest.nodes import Node  # noqa: E402
from brokertest.rawws import CLOSE, TEXT, encode_frame, upgrade_request  # noqa: E402

# CLIENTS and ROUNDS can be raised for a longer hunt (SHUTDOWN_CLIENTS, SHUTDOWN_ROUNDS).
CLIENTS = int(os.environ.get("SHUTDOWN_CLIENTS", "3000"))
ROUNDS = int(os.environ.get("SHUTDOWN_ROUNDS", "3"))
# Small client receive windows keep the node's kernel buffers from absorbing the stream:
# what the clients do not read stays queued in the node.
CLIENT_RCVBUF = 2048
# A publisher floods the clients (which stop reading after the first message) for this
# long before they leave, and goes on until the SIGTERM: the core is busy routing while the
# removals of the clients come in, and every client leaves with a full output queue.
FLOOD_SECONDS = 1.0
IN_FLIGHT = 200  # handshakes at a time
FDS_NEEDED = CLIENTS + 300  # per process: ours, and the node's, which inherits it
EXIT_BOUND = 30.0  # generous: a clean shutdown takes about a second
STEP_TIMEOUT = 60.0
ACK = b'{"type":"ack"'
PAYLOAD = b'{"type":"data-message","topic":"/bye/x","@data-type":"count","data":7}'
FILLER = b'{"type":"data-message","topic":"/bye/x","@data-type":"string","data":"%s"}' % (
    b"x" * 200)


def raise_fd_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= FDS_NEEDED:
        return
    if hard != resource.RLIM_INFINITY and hard < FDS_NEEDED:
        raise Skip("the hard file-descriptor limit is %d, need %d" % (hard, FDS_NEEDED))
    resource.setrlimit(resource.RLIMIT_NOFILE, (FDS_NEEDED, hard))


async def read_until(reader, marker, seen=b""):
    """Reads until `marker` has arrived (after what is in `seen`); returns all bytes."""
    data = seen
    while marker not in data:
        chunk = await reader.read(65536)
        if not chunk:
            raise TestFailure("the node closed a client before %r arrived" % marker)
        data += chunk
    return data


async def open_client(port, topics, rcvbuf=None):
    """A client that has upgraded, sent its subscriptions and read its ack."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)  # before connect()
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (LOCALHOST, port))
    reader, writer = await asyncio.open_connection(sock=sock)
    request, _ = upgrade_request()
    writer.write(request)
    head = await read_until(reader, b"\r\n\r\n")
    writer.write(encode_frame(TEXT, topics))
    rest = await read_until(reader, ACK, head[head.index(b"\r\n\r\n") + 4:])
    return reader, writer, rest


def drop(writer, how):
    """Ends a client: a close frame, a plain close, or a reset (SO_LINGER 0)."""
    if how == 0:
        writer.write(encode_frame(CLOSE, struct.pack("!H", 1000)))
    elif how == 2:
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.close()


def backtrace(pid):
    """All threads' stacks of a hung process, or why there are none."""
    gdb = shutil.which("gdb")
    if not gdb:
        return "(no gdb to take a backtrace)"
    try:
        out = subprocess.run([gdb, "-batch", "-ex", "thread apply all bt", "-p", str(pid)],
                             capture_output=True, text=True, timeout=60)
        return out.stdout + out.stderr
    except (OSError, subprocess.TimeoutExpired) as e:
        return "(gdb failed: %s)" % e


async def one_round(binary, n):
    with Node(binary, web_socket=True, name="node-%d" % n,
              args=["--broker.web-socket.max-clients=%d" % (CLIENTS + 10),
                    "--broker.web-socket-overflow-policy=drop_oldest"]) as node:
        gate = asyncio.Semaphore(IN_FLIGHT)

        async def join():
            async with gate:
                return await asyncio.wait_for(open_client(node.ws_port, '["/bye"]',
                                                          CLIENT_RCVBUF), STEP_TIMEOUT)

        clients = await asyncio.gather(*(join() for _ in range(CLIENTS)))
        _, pub, _ = await open_client(node.ws_port, "[]")
        pub.write(encode_frame(TEXT, PAYLOAD))
        await pub.drain()
        got = await asyncio.gather(*(asyncio.wait_for(read_until(r, b'"data":7}', rest),
                                                      STEP_TIMEOUT)
                                     for r, _, rest in clients))
        check_eq(len(got), CLIENTS, "clients that received the message")
        flooding = True

        async def flood():
            frame = encode_frame(TEXT, FILLER)
            while flooding:
                pub.write(frame * 20)
                await pub.drain()

        flooder = asyncio.ensure_future(flood())
        await asyncio.sleep(FLOOD_SECONDS)
        for i, (_, writer, _) in enumerate(clients):
            drop(writer, i % 3)
        await asyncio.sleep(0)  # let the event loop write the close frames
        node.send_signal(signal.SIGTERM)
        flooding = False
        try:
            await asyncio.wait_for(flooder, STEP_TIMEOUT)
        except (OSError, asyncio.TimeoutError):
            pass  # The node may close the publisher first.
        drop(pub, 1)
        loop = asyncio.get_running_loop()
        try:
            status = await loop.run_in_executor(None, node.popen.wait, EXIT_BOUND)
        except subprocess.TimeoutExpired:
            stacks = await loop.run_in_executor(None, backtrace, node.pid)
            raise TestFailure("round %d: the node did not exit within %.0f s of SIGTERM after "
                              "%d clients disconnected; its threads:\n%s"
                              % (n, EXIT_BOUND, CLIENTS, stacks)) from None
        node.wait_exit()
        check(status == 0, "round %d: exit status %s after SIGTERM\n%s"
              % (n, status, node.describe()))


async def main(binary):
    raise_fd_limit()
    for n in range(1, ROUNDS + 1):
        await one_round(binary, n)
        print("round %d: %d clients left, SIGTERM, exit 0" % (n, CLIENTS), flush=True)


run_tests([main], limit=100)
