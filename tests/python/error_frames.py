"""py.error_frames: how brokerclient reports what goes wrong.

- An error frame from the node raises NodeError with the node's `code` and `context` from
  get() / iteration, and the client stays usable: it still
  receives and publishes (blocking and asyncio). With on_error, errors go to the callback.
- A value or topic brokerclient cannot encode raises EncodeError before anything is sent
  (the node's input numbering proves nothing reached it).
- A node that disconnects a slow client sends backpressure_overflow: NodeError, then
  ConnectionClosed.
- A lost connection (node killed) raises ConnectionClosed from get(), publish() and
  iteration; connecting to nothing, to a wrong path, or with bad topics fails clearly.
"""

import asyncio

import harness  # noqa: F401  (the paths of brokertest and brokerclient)
from brokertest.checks import check, check_eq, run_tests
from brokertest.nodes import Node
from brokertest.wsclient import in_thread

import brokerclient
from brokerclient import (ConnectError, ConnectionClosed, Count, EncodeError, NodeError, aio,
                          codec)

TIMEOUT = 10
INVALID = '{"type":"data-message","topic":"/t/x","@data-type":"phone","data":"555-0123"}'


def check_node_error(error, context_prefix, code="deserialization_failed"):
    check(isinstance(error, NodeError), "expected a NodeError, got %r" % (error,))
    check_eq(error.code, code, "the error frame's code")
    check(error.context.startswith(context_prefix),
          "the error frame's context %r should start with %r" % (error.context,
                                                                context_prefix))


async def expect_node_error(get, context_prefix, code="deserialization_failed"):
    try:
        got = await get()
    except NodeError as e:
        check_node_error(e, context_prefix, code)
        return
    raise AssertionError("expected NodeError(%s, %s...), got %r" % (code, context_prefix, got))


def start_node(binary, args=(), name="node"):
    return Node(binary, args, name, web_socket=True)


async def test_blocking_client(node_bin):
    """a blocking client raises NodeError and EncodeError, and stays usable"""
    with start_node(node_bin) as node:
        client = await in_thread(brokerclient.connect, node.url(), ["/t"])
        other = await in_thread(brokerclient.connect, node.url(), ["/t"])
        try:
            await in_thread(client.send_text, "How is it going?")
            await expect_node_error(lambda: in_thread(client.get, TIMEOUT),
                                    "input #1 contained malformed JSON")
            # Still usable both ways.
            await in_thread(client.publish, "/t/ok", Count(1))
            check_eq(await in_thread(other.get, TIMEOUT), ("/t/ok", 1), "published after the error")
            await in_thread(other.publish, "/t/back", "x")
            check_eq(await in_thread(client.get, TIMEOUT), ("/t/back", "x"),
                     "received after the error")
            # Refused locally, so the node's next input is #3.
            for bad in [object(), 2**64, brokerclient.Set([1, 1])]:
                try:
                    await in_thread(client.publish, "/t/bad", bad)
                    raise AssertionError("publishing %r did not raise" % (bad,))
                except EncodeError as e:
                    print("refused locally: %s" % e)
            try:
                await in_thread(client.publish, "<$>/local/data/statuses", 1)
                raise AssertionError("publishing to a reserved topic did not raise")
            except EncodeError:
                pass
            await in_thread(client.send_text, INVALID)
            await expect_node_error(lambda: in_thread(client.get, TIMEOUT),
                                    "input #3 contained invalid data")
            # The node's own reserved-topic check, reached by a hand-made frame.
            await in_thread(client.send_text, codec.encode_message("/t/r", 1).replace(
                '"topic":"/t/r"', '"topic":"<$>/x"'))
            await expect_node_error(lambda: in_thread(client.get, TIMEOUT),
                                    "input #4 contained invalid data")
        finally:
            await in_thread(client.close)
            await in_thread(other.close)


async def test_asyncio_client(node_bin):
    """an asyncio client raises NodeError from iteration and goes on, or calls on_error"""
    errors = []
    with start_node(node_bin) as node:
        async with aio.connect(node.url(), ["/t"]) as client, \
                aio.connect(node.url(), [], on_error=errors.append) as quiet, \
                aio.connect(node.url(), []) as pub:
            await client.send_text(INVALID)
            received = []
            while len(received) < 2:
                try:
                    async for topic, value in client:
                        received.append((topic, value))
                        break
                except NodeError as e:  # iteration raises; the next loop goes on
                    check_node_error(e, "input #1 contained invalid data")
                    received.append("error")
                    # Published only now: the error frame and data from another connection
                    # travel independently, so only this order is guaranteed.
                    await pub.publish("/t/after", 2)
            check_eq(received, ["error", ("/t/after", 2)], "error, then data again")

            await quiet.send_text(INVALID)
            await quiet.send_text("[1,2]")
            await quiet.publish("/t/q", 3)
            check_eq(await client.get(TIMEOUT), ("/t/q", 3), "a message after on_error errors")
            # quiet's reader hands the errors to on_error on its own time: wait, bounded.
            deadline = asyncio.get_running_loop().time() + TIMEOUT
            while len(errors) < 2 and asyncio.get_running_loop().time() < deadline:
                await asyncio.sleep(0.01)
            check_eq(len(errors), 2, "errors passed to on_error: %r" % errors)
            check_node_error(errors[0], "input #1 contained invalid data")
            check_node_error(errors[1], "input #2 expected a JSON object")


async def test_slow_consumer(node_bin):
    """a client that does not read gets backpressure_overflow, then ConnectionClosed"""
    with start_node(node_bin, ["--broker.web-socket-buffer-size=4"], "small queue") as node:
        slow = await aio.connect(node.url(), ["/big"], queue_size=1)
        async with aio.connect(node.url(), []) as pub:
            payload = "x" * 65536
            for i in range(300):  # ~19 MiB: more than every buffer on the way holds
                await pub.publish("/big/%d" % i, payload)
        saw_overflow = False
        try:
            for _ in range(1000):
                try:
                    await slow.get(TIMEOUT)
                except NodeError as e:
                    check_node_error(e, "output queue exceeded", code="backpressure_overflow")
                    saw_overflow = True
            raise AssertionError("the slow client was not disconnected")
        except ConnectionClosed as e:
            check(saw_overflow, "ConnectionClosed without a backpressure_overflow before it")
            check_eq(e.code, 1000, "close code after the overflow")
            print("slow client: backpressure_overflow, then close 1000")
        await slow.close()


async def test_lost_connection(node_bin):
    """after the node died, get, publish and iteration raise ConnectionClosed"""
    with start_node(node_bin, name="killed") as node:
        client = await aio.connect(node.url(), ["/t"])
        sync_client = await in_thread(brokerclient.connect, node.url(), ["/t"])
        node.kill()
    for what, call in [("asyncio get", lambda: client.get(TIMEOUT)),
                       ("blocking get", lambda: in_thread(sync_client.get, TIMEOUT))]:
        try:
            await call()
            raise AssertionError("%s after the node died returned" % what)
        except ConnectionClosed as e:
            print("%s: %s" % (what, e))
    for what, call in [("asyncio publish", lambda: client.publish("/t", 1)),
                       ("blocking publish", lambda: in_thread(sync_client.publish, "/t", 1))]:
        try:
            await call()
            raise AssertionError("%s after the node died returned" % what)
        except ConnectionClosed:
            pass
    try:
        async for _ in client:
            raise AssertionError("iteration yielded after the node died")
        raise AssertionError("iteration ended quietly after the node died")
    except ConnectionClosed:
        pass
    await client.close()
    await in_thread(sync_client.close)
    try:
        await in_thread(sync_client.get, 1)
        raise AssertionError("get on a closed client returned")
    except ConnectionClosed:
        pass


async def test_connect_failures(node_bin):
    """connecting to nothing, to a wrong path or with bad topics fails clearly"""
    with start_node(node_bin) as node:
        dead_url = "ws://127.0.0.1:%d" % node.port  # a port that does not speak HTTP
        for what, url in [("wrong path", node.url("/wrong")),
                          ("not a WebSocket server", dead_url),
                          ("nothing listening", "ws://127.0.0.1:1")]:
            try:
                client = await asyncio.wait_for(aio.connect(url, ["/t"], open_timeout=5), 20)
            except ConnectError as e:
                print("%s: %s" % (what, e))
                continue
            await client.close()
            raise AssertionError("connecting to %s (%s) succeeded" % (url, what))
        for topics in ([1], [b"/t"]):
            try:
                await aio.connect(node.url(), topics)
                raise AssertionError("topics %r accepted" % (topics,))
            except TypeError:
                pass


run_tests([test_blocking_client, test_asyncio_client, test_connect_failures,
           test_slow_consumer, test_lost_connection], limit=100)
