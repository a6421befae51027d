"""WebSocket clients we did not write (Debian's python3-websockets), with bounded waits.

    ws, ack = await subscribe(node.ws_port, ["/test"])    # connected, subscribed, acked
    await ws.send(count_message("/test/x", 1))
    check_eq(await recv(other, what="the message"), data_message("/test/x", "count", 1), ...)
    await poll_metric(node.metrics_port, key, lambda v: v == 0)

Needs the websockets package: only the ws.* and py.* tests import this module (they run
on the system interpreter, which has it); without it, importing this module ends the
script as skipped.
"""

import asyncio
import functools
import json
import sys

from .checks import TestFailure, check, check_eq, skip_script
from .net import LOCALHOST, WEB_SOCKET_PATH, wait_metric

try:
    import websockets
except ImportError as e:
    skip_script("%s cannot import websockets (%s)" % (sys.executable, e))

WAIT_TIMEOUT = 10.0
CLOSE_TIMEOUT = 2.0


async def connect(port, path=WEB_SOCKET_PATH, **kwargs):
    """An open websockets connection that neither pings nor limits message sizes; wss://
    when an `ssl` context is given."""
    kwargs.setdefault("max_size", None)
    kwargs.setdefault("ping_interval", None)
    kwargs.setdefault("open_timeout", WAIT_TIMEOUT)
    kwargs.setdefault("close_timeout", CLOSE_TIMEOUT)
    scheme = "wss" if kwargs.get("ssl") else "ws"
    return await websockets.connect("%s://%s:%d%s" % (scheme, LOCALHOST, port, path), **kwargs)


async def subscribe(port, topics, **kwargs):
    """Connects, sends `topics` as the first message and returns (ws, ack text)."""
    ws = await connect(port, **kwargs)
    await ws.send(json.dumps(topics))
    ack = await recv(ws, what="the ack")
    check(json.loads(ack).get("type") == "ack", "expected an ack, got %r" % ack)
    return ws, ack


async def recv(ws, timeout=WAIT_TIMEOUT, what="a message"):
    try:
        return await asyncio.wait_for(ws.recv(), timeout)
    except asyncio.TimeoutError:
        raise TestFailure("timed out after %.1f s waiting for %s" % (timeout, what)) from None


async def recv_data(ws, timeout=WAIT_TIMEOUT, what="a data message"):
    """The next frame that is not on an internal <$> topic (status events may interleave)."""
    while True:
        text = await recv(ws, timeout, what)
        if not text.startswith('{"type":"data-message","topic":"<$>'):
            return text


async def expect_silence(ws, seconds=0.3, what="the client"):
    """Fails if `ws` receives anything within `seconds`."""
    try:
        text = await asyncio.wait_for(ws.recv(), seconds)
    except asyncio.TimeoutError:
        return
    raise TestFailure("%s should have received nothing, got %r" % (what, text[:300]))


async def expect_close(ws, code, timeout=WAIT_TIMEOUT, what="the connection"):
    """Waits for the server to close `ws` with `code`; frames before the close fail."""
    try:
        text = await asyncio.wait_for(ws.recv(), timeout)
    except websockets.ConnectionClosed:
        check_eq(ws.close_code, code, "close code of %s" % what)
        return
    except asyncio.TimeoutError:
        raise TestFailure("%s was not closed within %.1f s" % (what, timeout)) from None
    raise TestFailure("expected %s to close with %d, got a frame %r" % (what, code, text[:300]))


def count_message(topic, n):
    """A data message with a count, as a client writes it (json.dumps spacing)."""
    return json.dumps({"type": "data-message", "topic": topic, "@data-type": "count", "data": n})


def data_message(topic, data_type, data):
    """A compact data-message frame, exactly as the server writes it."""
    return '{"type":"data-message","topic":%s,"@data-type":"%s","data":%s}' % (
        json.dumps(topic), data_type, data)


async def check_delivery(sender, receiver, topic, n, what):
    """`sender` publishes count `n` on `topic`; it must be the next frame `receiver` gets."""
    await sender.send(count_message(topic, n))
    check_eq(await recv(receiver, what=what), data_message(topic, "count", n), what)


async def check_run(sender, receiver, topic, count, what):
    """`sender` publishes counts 0..count-1 on `topic`; `receiver` must get all of them, in
    order, as its next frames."""
    for n in range(count):
        await sender.send(count_message(topic, n))
    got = [await recv(receiver, what="message %d of %s" % (n, what)) for n in range(count)]
    check_eq(got, [data_message(topic, "count", n) for n in range(count)], what + ", in order")


def error_frame(context, code="deserialization_failed"):
    return '{"type":"error","code":"%s","context":%s}' % (code, json.dumps(context))


async def in_thread(function, *args, **kwargs):
    """Runs a blocking call (a scrape, a node's exit, a synchronous client) on a worker
    thread, so that the event loop, and the script's time limit, keep running."""
    return await asyncio.get_running_loop().run_in_executor(
        None, functools.partial(function, *args, **kwargs))


async def poll_metric(port, key, pred, timeout=WAIT_TIMEOUT, what=None):
    """net.wait_metric() for coroutines."""
    return await in_thread(lambda: wait_metric(port, key, pred, timeout, what))
