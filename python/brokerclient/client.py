"""The blocking client.

    with brokerclient.connect("ws://127.0.0.1:9997", ["/demo"]) as client:
        client.publish("/demo/hello", Count(42))
        topic, value = client.get(timeout=5)

Design: each blocking Client owns one daemon thread running an asyncio event loop, and an
aio.Client on that loop does all the work (so both clients behave identically, and this
works with websockets 10.4, which has no synchronous client). A call from the user's
thread submits a coroutine to that loop and waits for its result; values are encoded in
the caller's thread, so encoding errors are raised there before anything is queued.
Methods may be called from any thread; one get() at a time gives a defined order.
"""

import asyncio
import concurrent.futures
import threading

from . import aio
from .codec import encode_message
from .errors import ConnectionClosed


class _LoopThread:
    """An event loop on a daemon thread, and a way to run coroutines on it.

    run() may be called from any thread but the loop's own; once stop() began, it raises
    ConnectionClosed, and calls still waiting are cancelled rather than left hanging."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name="brokerclient", daemon=True)
        self._lock = threading.Lock()  # guards _stopped and _pending
        self._stopped = False
        self._pending = set()
        self.thread.start()

    def _run(self):
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coro, timeout=None):
        """Runs `coro` on the loop and returns its result. A timeout or an interrupt
        (Ctrl-C) in the waiting thread cancels it."""
        if threading.current_thread() is self.thread:
            coro.close()
            raise RuntimeError("blocking brokerclient calls cannot be made from the "
                               "client's own thread (e.g. from an on_error callback)")
        with self._lock:
            if self._stopped:
                coro.close()
                raise ConnectionClosed("the client is closed")
            future = asyncio.run_coroutine_threadsafe(coro, self.loop)
            self._pending.add(future)
        try:
            return future.result(timeout)
        except concurrent.futures.CancelledError:
            if self._stopped:
                raise ConnectionClosed("the client is closed") from None
            raise
        except BaseException:
            future.cancel()
            raise
        finally:
            with self._lock:
                self._pending.discard(future)

    def stop(self):
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            pending = list(self._pending)
        asyncio.run_coroutine_threadsafe(self._shutdown(), self.loop)
        self.thread.join()
        for future in pending:  # cancelled with their tasks already; to be sure
            future.cancel()
        self.loop.close()

    async def _shutdown(self):
        """Cancels what still runs on the loop (waiting calls then raise), then stops it."""
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        # Stop only after the callbacks that hand the tasks' results to waiting threads.
        await asyncio.sleep(0)
        self.loop.call_soon(self.loop.stop)


class Client:
    """A blocking connection to a node's WebSocket API. Create it with connect()."""

    def __init__(self, runner, client):
        self._runner = runner
        self._client = client
        self._lock = threading.Lock()
        self._closed = False

    @property
    def url(self):
        return self._client.url

    @property
    def topics(self):
        """The subscribed topic prefixes."""
        return list(self._client.topics)

    @property
    def endpoint(self):
        """The node's endpoint id, from its ack."""
        return self._client.endpoint

    @property
    def version(self):
        """The node's software version, from its ack."""
        return self._client.version

    @property
    def reconnects(self):
        """How often the connection was re-established (reconnect=True)."""
        return self._client.reconnects

    def publish(self, topic, value, timeout=None):
        """Publishes `value` (any Broker value, or a zeek.Event) on `topic`.

        Raises EncodeError for a value or topic that cannot be sent, ConnectionClosed when
        the connection is gone (with reconnect=True it waits for the next connection), and
        TimeoutError if sending takes longer than `timeout` seconds."""
        self.send_text(encode_message(topic, value), timeout)

    def send_text(self, text, timeout=None):
        """Sends a frame as is (e.g. one made by codec.encode_message, or by another
        tool). The node answers invalid input with an error frame, raised by get()."""
        try:
            self._call(self._client.send_text(text), timeout)
        except concurrent.futures.TimeoutError:  # not yet the builtin before Python 3.11
            raise TimeoutError("send did not complete within %s s" % timeout) from None

    def get(self, timeout=None):
        """The next message as `(topic, value)`, waiting at most `timeout` seconds.

        Raises TimeoutError when none arrives in time, NodeError for an error frame from
        the node (the client stays usable), and ConnectionClosed once the connection is
        gone and every message received before has been returned."""
        return self._call(self._client.get(timeout))

    def _call(self, coro, timeout=None):
        """Runs a coroutine of the asyncio client on its loop."""
        return self._runner.run(coro, timeout)

    def __iter__(self):
        """Yields `(topic, value)` until the client is closed; a lost connection raises
        ConnectionClosed (unless reconnect=True), an error frame raises NodeError."""
        while True:
            try:
                yield self.get()
            except ConnectionClosed:
                if self._client._closing:
                    return
                raise

    def close(self):
        """Closes the connection (code 1000) and stops the client's thread. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        try:
            self._runner.run(self._client.close())
        finally:
            self._runner.stop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        return "<brokerclient.Client %s topics=%r endpoint=%s>" % (self.url, self.topics,
                                                                    self.endpoint)


def connect(url, topics=(), **options):
    """Connects to a node and subscribes to `topics`; returns a blocking Client (also a
    context manager). Takes the options of aio.connect (TLS files, reconnect, on_error,
    ...); an `on_error` callback runs on the client's thread.

    Raises ConnectError if the node cannot be reached or refuses the subscriptions."""
    runner = _LoopThread()

    async def start():
        return await aio.connect(url, topics, **options)

    try:
        client = runner.run(start())
    except BaseException:
        runner.stop()
        raise
    return Client(runner, client)
