"""The blocking client.

    with brokerclient.connect("ws://127.0.0.1:9997", ["/demo"]) as client:
        client.publish("/demo/hello", Count(42))
        topic, value = client.get(timeout=5)

Design: each blocking Client owns one daemon thread running an asyncio event loop, and an
aio.Client on that loop does all the work (so both clients behave identically, and this
works with websockets 10.4, which has no synchronous client). get() submits a coroutine to
that loop and waits for its result, taking every message already waiting (up to a batch)
so that a backlog crosses threads once per batch. publish() encodes in the caller's thread (so encoding
errors are raised there), puts the frame into an outbox and returns: a task on the loop
sends the outbox in order, so a thread does not wait for the loop once per message. The
outbox is bounded (publish() blocks while it is full); flush() and close() wait for it.
Methods may be called from any thread; one get() at a time gives a defined order.
"""

import asyncio
import collections
import concurrent.futures
import threading

from . import aio
from .codec import encode_message
from .errors import BrokerError, ConnectionClosed

#: Frames a blocking client holds for sending before publish() waits for room.
OUTBOX_SIZE = 1024
#: Received messages get() fetches from the loop at once when several are waiting.
RECEIVE_BATCH = 64


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

    def call_soon(self, fn, *args):
        """Schedules `fn(*args)` on the loop; raises ConnectionClosed once stopped."""
        with self._lock:
            if self._stopped:
                raise ConnectionClosed("the client is closed")
            self.loop.call_soon_threadsafe(fn, *args)

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


class _Outbox:
    """Frames on their way from the user's threads to the connection, in order.

    Threads put() frames into a deque (waiting while `size` are queued) and wake the loop
    only when no writer is running; the writer task sends frames one by one with the
    asyncio client until the deque is empty. The first failure to send is kept and raised
    by the next put() or flush()."""

    def __init__(self, runner, client, size):
        self._runner = runner
        self._client = client
        self._size = size
        self._cond = threading.Condition()  # guards everything below but _writer
        self._frames = collections.deque()
        self._queued = 0  # put but not yet sent (or failed)
        self._scheduled = False  # a writer runs or is about to start
        self._shut = False
        self._writer = None  # loop thread only
        self.error = None

    def _raise_error(self):
        error = self.error or self._client._terminal
        if error is not None:
            raise ConnectionClosed(str(error), getattr(error, "code", None),
                                   getattr(error, "reason", None))

    def put(self, text, timeout=None):
        self._raise_error()
        with self._cond:
            if not self._cond.wait_for(lambda: self._shut or self._queued < self._size,
                                       timeout):
                raise TimeoutError("%d messages still wait to be sent after %s s"
                                   % (self._queued, timeout))
            if self._shut:
                raise ConnectionClosed("the client is closed")
            self._queued += 1
            self._frames.append(text)
            wake = not self._scheduled
            self._scheduled = True
        if wake:
            try:
                self._runner.call_soon(self._start_writer)
            except ConnectionClosed:
                self._sent()
                raise

    def _sent(self):
        with self._cond:
            self._queued -= 1
            self._cond.notify_all()

    def _start_writer(self):
        self._writer = asyncio.ensure_future(self._write())

    async def _write(self):
        while True:
            with self._cond:
                if not self._frames:
                    self._scheduled = False
                    return
                text = self._frames.popleft()
            try:
                await self._client.send_text(text)
            except BrokerError as e:
                if self.error is None:
                    self.error = e
            finally:
                self._sent()

    async def _drain(self):
        while True:
            if self._writer is not None and not self._writer.done():
                await asyncio.wait({self._writer})  # waiting must not cancel the writer
                continue
            with self._cond:
                if self._queued == 0:
                    return
            await asyncio.sleep(0)  # a writer is about to start

    def flush(self, timeout=None):
        """Waits until every queued frame was handed to the connection."""
        try:
            self._runner.run(self._drain(), timeout)
        except concurrent.futures.TimeoutError:  # not yet the builtin before Python 3.11
            raise TimeoutError("messages still wait to be sent after %s s" % timeout) from None
        self._raise_error()

    def shut(self):
        """Wakes and fails every put() still waiting for room."""
        with self._cond:
            self._shut = True
            self._cond.notify_all()


class Client:
    """A blocking connection to a node's WebSocket API. Create it with connect()."""

    def __init__(self, runner, client, outbox_size=OUTBOX_SIZE):
        self._runner = runner
        self._client = client
        self._outbox = _Outbox(runner, client, outbox_size)
        self._received = collections.deque()  # fetched from the loop, not yet returned
        self._get_lock = threading.Lock()  # one get() fetches at a time: keeps the order
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
    def connected(self):
        """True while the connection is up; False while reconnecting and once closed."""
        return self._client.connected

    @property
    def reconnects(self):
        """How often the connection was re-established (reconnect=True)."""
        return self._client.reconnects

    def publish(self, topic, value, timeout=None):
        """Publishes `value` (any Broker value, or a zeek.Event) on `topic`.

        Returns once the message is queued for sending; messages go out in the order they
        were published (from any thread). Raises EncodeError for a value or topic that
        cannot be sent, before queuing it; TimeoutError if the outbox stays full (1024
        messages not yet sent) for `timeout` seconds; and ConnectionClosed once the
        connection is gone without reconnect=True (with it, messages wait for the next
        connection). Use flush() to wait until everything was sent."""
        self._outbox.put(encode_message(topic, value), timeout)

    def send_text(self, text, timeout=None):
        """Queues a frame as is (e.g. one made by codec.encode_message, or by another
        tool), like publish(). The node answers invalid input with an error frame, which
        get() raises."""
        self._outbox.put(text, timeout)

    def flush(self, timeout=None):
        """Waits until every published message was handed to the connection. Raises
        ConnectionClosed if one could not be sent, TimeoutError after `timeout` seconds."""
        self._outbox.flush(timeout)

    def get(self, timeout=None):
        """The next message as `(topic, value)`, waiting at most `timeout` seconds.

        Raises TimeoutError when none arrives in time, NodeError for an error frame from
        the node (the client stays usable), and ConnectionClosed once the connection is
        gone and every message received before has been returned."""
        with self._get_lock:
            if not self._received:
                self._received.extend(
                    self._runner.run(self._client._take(timeout, RECEIVE_BATCH)))
            item = self._received.popleft()
        if isinstance(item, BaseException):
            raise item
        return item

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
        """Sends what is still queued (waiting up to the close_timeout option), closes the
        connection (code 1000) and stops the client's thread. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        try:
            try:
                self._outbox.flush(self._client.close_timeout)
            except (BrokerError, TimeoutError):
                pass  # closing anyway; flush() is the way to learn about lost messages
            self._runner.run(self._client.close())
        finally:
            self._outbox.shut()
            self._runner.stop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        return "<brokerclient.Client %s topics=%r endpoint=%s>" % (self.url, self.topics,
                                                                    self.endpoint)


def connect(url, topics=(), *, outbox_size=OUTBOX_SIZE, **options):
    """Connects to a node and subscribes to `topics`; returns a blocking Client (also a
    context manager). Takes the options of aio.connect (TLS files, reconnect, on_error,
    ...; an `on_error` callback runs on the client's thread), and `outbox_size`: how many
    published messages may wait to be sent before publish() blocks.

    Raises ConnectError if the node cannot be reached or refuses the subscriptions."""
    runner = _LoopThread()

    async def start():
        return await aio.connect(url, topics, **options)

    try:
        client = runner.run(start())
    except BaseException:
        runner.stop()
        raise
    return Client(runner, client, outbox_size)
