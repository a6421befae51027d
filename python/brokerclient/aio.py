"""The asyncio client.

    async with brokerclient.aio.connect("ws://127.0.0.1:9997", ["/demo"]) as client:
        await client.publish("/demo/hello", Count(42))
        async for topic, value in client:
            print(topic, value)

Design: one task per client (the reader) owns the receive side. It decodes every frame
and puts `(topic, value)` or an exception (a NodeError for an error frame, a DecodeError
for a frame it cannot read) into a bounded queue that get() and iteration take from. When
the queue is full the reader stops reading, so TCP carries the back-pressure to the node
(whose own queue for this client then applies its overflow policy). publish() sends from
the caller's task. With reconnect=True the reader also re-dials a lost connection with
exponential back-off and re-sends the subscriptions; publish() waits for it meanwhile.
Everything runs on the event loop of the task that connected; the client is not
thread-safe (brokerclient.connect wraps it for threads).
"""

import asyncio
import json
import logging
import random
import ssl as ssl_module
import urllib.parse

from . import _compat
from .codec import decode_frame, encode_message
from .errors import (BrokerError, ConnectError, ConnectionClosed, DecodeError, EncodeError,
                     NodeError)
from .zeek import Event

log = logging.getLogger("brokerclient")

#: The only path of Broker's WebSocket API; used when the URL has none.
API_PATH = "/v1/messages/json"
#: Received messages buffered before the client stops reading from the socket.
QUEUE_SIZE = 256
#: Seconds to wait for the WebSocket handshake and then for the ack.
OPEN_TIMEOUT = 10.0
#: Seconds to wait for the node's close frame after ours.
CLOSE_TIMEOUT = 5.0
#: Keep-alive pings (seconds): a dead connection is noticed within about twice this.
PING_INTERVAL = 20.0
#: Largest message accepted from the node (the node itself accepts at least 16 MiB).
MAX_MESSAGE_SIZE = 64 * 2**20
#: Reconnect back-off: first delay, doubled per failure up to the maximum (seconds).
RECONNECT_DELAY = 0.1
RECONNECT_MAX_DELAY = 10.0


def normalize_url(url):
    """`url` with the API path filled in when it has none (`ws://host:9997`)."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("ws", "wss"):
        raise ValueError("URL must start with ws:// or wss://, got %r" % (url,))
    if parts.path in ("", "/"):
        parts = parts._replace(path=API_PATH)
    return urllib.parse.urlunsplit(parts)


def make_ssl_context(url, ssl=None, cafile=None, certfile=None, keyfile=None,
                     password=None):
    """The SSLContext for `url`: `ssl` if given, else one that trusts `cafile` (or the
    system's CAs) and presents `certfile`/`keyfile` (mutual TLS). None for ws://."""
    tls_files = cafile or certfile or keyfile
    if not url.startswith("wss://"):
        if ssl is not None or tls_files:
            raise ValueError("TLS options need a wss:// URL, got %r" % (url,))
        return None
    if ssl is not None:
        if tls_files:
            raise ValueError("pass either ssl= or cafile/certfile/keyfile, not both")
        return ssl
    context = ssl_module.create_default_context(cafile=cafile)
    if certfile:
        context.load_cert_chain(certfile, keyfile, password)
    elif keyfile:
        raise ValueError("keyfile given without certfile")
    return context


def _check_topics(topics):
    if isinstance(topics, str):
        topics = [topics]
    topics = list(topics)
    for t in topics:
        if not isinstance(t, str):
            raise TypeError("topics must be strs, got %r" % (t,))
    return topics


class _Closed:
    """Queue marker: nothing follows; get() raises the client's terminal error."""


_CLOSED = _Closed()


class Client:
    """A connection to a node's WebSocket API. Create it with connect()."""

    def __init__(self, url, topics=(), *, ssl=None, cafile=None, certfile=None,
                 keyfile=None, password=None, headers=None, reconnect=False,
                 reconnect_delay=RECONNECT_DELAY, reconnect_max_delay=RECONNECT_MAX_DELAY,
                 on_error=None, decode_events=True, queue_size=QUEUE_SIZE,
                 open_timeout=OPEN_TIMEOUT, close_timeout=CLOSE_TIMEOUT,
                 ping_interval=PING_INTERVAL, max_message_size=MAX_MESSAGE_SIZE):
        self.url = normalize_url(url)
        #: The subscribed topic prefixes (fixed for the connection, as in Broker).
        self.topics = _check_topics(topics)
        #: The node's endpoint id and software version, from its ack.
        self.endpoint = None
        self.version = None
        #: How often the connection was re-established.
        self.reconnects = 0
        self._ssl = make_ssl_context(self.url, ssl, cafile, certfile, keyfile, password)
        self._headers = dict(headers or {})
        self._reconnect = reconnect
        self._delays = (reconnect_delay, reconnect_max_delay)
        self._on_error = on_error
        self._decode_events = decode_events
        self._ws_options = dict(open_timeout=open_timeout, close_timeout=close_timeout,
                                ping_interval=ping_interval, ping_timeout=ping_interval,
                                max_size=max_message_size)
        self._open_timeout = open_timeout
        self.close_timeout = close_timeout
        self._queue = asyncio.Queue(queue_size)
        self._ws = None
        self._reader = None
        self._connected = asyncio.Event()
        self._closing = False
        self._terminal = None  # the ConnectionClosed that get() raises once drained

    @property
    def connected(self):
        """True while the connection is up; False while reconnecting and once closed."""
        return self._connected.is_set() and self._terminal is None and not self._closing

    # -- connecting ----------------------------------------------------------------------

    async def _open(self):
        """Connects, subscribes and reads the ack; returns the connection."""
        ws = await _compat.open_connection(self.url, ssl=self._ssl, headers=self._headers,
                                           **self._ws_options)
        try:
            try:
                await ws.send(json.dumps(self.topics))
                text = await asyncio.wait_for(ws.recv(), self._open_timeout)
            except asyncio.TimeoutError:
                raise ConnectError("%s: no ack within %s s" % (self.url, self._open_timeout))
            except _compat.ConnectionClosed as e:
                code, reason = _compat.close_info(e)
                raise ConnectError("%s closed the connection instead of acknowledging the "
                                   "subscriptions (close code %s %r)"
                                   % (self.url, code, reason)) from None
            try:
                frame = decode_frame(text)
            except DecodeError as e:
                raise ConnectError("%s: unreadable answer to the subscriptions: %s"
                                   % (self.url, e)) from None
            if frame[0] == "error":
                raise ConnectError("%s refused the subscriptions: %s: %s"
                                   % (self.url, frame[1], frame[2]))
            if frame[0] != "ack":
                raise ConnectError("%s: expected an ack, got %s" % (self.url, text[:200]))
            self.endpoint, self.version = frame[1], frame[2]
            return ws
        except BaseException:
            await _abort(ws)
            raise

    async def _start(self):
        self._ws = await self._open()
        self._connected.set()
        self._reader = asyncio.ensure_future(self._read_loop())
        return self

    # -- receiving ----------------------------------------------------------------------

    def _decode(self, text):
        try:
            frame = decode_frame(text)
        except DecodeError as e:
            return e
        if frame[0] == "data":
            value = frame[2]
            if self._decode_events:
                value = Event.from_value(value) or value
            return (frame[1], value)
        if frame[0] == "error":
            return NodeError(frame[1], frame[2])
        return None  # a second ack: nothing to report

    async def _deliver(self, item):
        if isinstance(item, NodeError) and self._on_error is not None:
            try:
                self._on_error(item)
            except Exception:
                log.exception("on_error callback failed")
        elif item is not None:
            await self._queue.put(item)

    async def _read_loop(self):
        try:
            while True:
                try:
                    text = await self._ws.recv()
                except _compat.ConnectionClosed as e:
                    if self._closing or not await self._connection_lost(e):
                        return
                    continue
                await self._deliver(self._decode(text))
        except asyncio.CancelledError:
            raise
        except Exception as e:  # a bug: end the client visibly rather than hang get()
            log.exception("brokerclient reader failed")
            self._finish(ConnectionClosed("the client's reader failed: %r" % (e,)))

    async def _connection_lost(self, exc):
        """Redials if enabled (True once reconnected); otherwise ends the client."""
        code, reason = _compat.close_info(exc)
        self._connected.clear()
        if not self._reconnect:
            self._finish(ConnectionClosed("connection to %s %s" % (self.url, _how(code, reason)),
                                          code, reason))
            return False
        log.warning("connection to %s %s; reconnecting", self.url, _how(code, reason))
        await self._redial()
        return True

    async def _redial(self):
        delay, max_delay = self._delays
        while True:
            # Jitter keeps many clients of a restarted node from dialing in lockstep.
            await asyncio.sleep(delay * random.uniform(0.5, 1.0))
            try:
                self._ws = await self._open()
            except (ConnectError, OSError) as e:
                log.info("reconnecting to %s failed: %s", self.url, e)
                delay = min(delay * 2, max_delay)
                continue
            self.reconnects += 1
            self._connected.set()
            log.warning("reconnected to %s (%d)", self.url, self.reconnects)
            return

    def _finish(self, error):
        """Marks the client as ended with `error`; get() raises it once the queue is empty."""
        if self._terminal is None:
            self._terminal = error
            self._connected.set()  # wake publishers, which then see the terminal error
            try:
                self._queue.put_nowait(_CLOSED)
            except asyncio.QueueFull:
                pass  # get() checks _terminal when the queue runs dry

    def _ended(self):
        """A fresh copy of the error that ended the client (each raise gets its own
        traceback)."""
        t = self._terminal
        if t is None:
            return ConnectionClosed("the client is closed")
        return ConnectionClosed(str(t), t.code, t.reason)

    async def get(self, timeout=None):
        """The next message as `(topic, value)`; a Zeek event's value is a zeek.Event.

        Raises NodeError for an error frame (the client stays usable), DecodeError for a
        frame it cannot decode, TimeoutError after `timeout` seconds without a message,
        and ConnectionClosed once the connection is gone and every message before it has
        been returned."""
        item = await self._next_item(timeout)
        if isinstance(item, BaseException):
            raise item
        return item

    async def _next_item(self, timeout):
        """The next queued message or exception; raises TimeoutError or, at the end,
        ConnectionClosed."""
        try:
            item = self._queue.get_nowait()  # also serves timeout=0
        except asyncio.QueueEmpty:
            if self._terminal is not None:
                raise self._ended() from None
            if timeout is None:
                item = await self._queue.get()
            else:
                try:
                    item = await asyncio.wait_for(self._queue.get(), timeout)
                except asyncio.TimeoutError:
                    raise TimeoutError("no message within %s s" % timeout) from None
        if item is _CLOSED:
            self._queue.put_nowait(_CLOSED)  # for any other waiting getter
            raise self._ended()
        return item

    async def _take(self, timeout, limit):
        """Up to `limit` queued items (messages or exceptions), waiting up to `timeout` for
        the first: lets the blocking client cross threads once per batch."""
        items = [await self._next_item(timeout)]
        while len(items) < limit:
            try:
                item = self._queue.get_nowait()
            except asyncio.QueueEmpty:
                break
            if item is _CLOSED:
                self._queue.put_nowait(_CLOSED)
                break
            items.append(item)
        return items

    def __aiter__(self):
        return self

    async def __anext__(self):
        """Iteration ends when the client is closed; a lost connection raises
        ConnectionClosed (unless reconnect=True), an error frame raises NodeError."""
        try:
            return await self.get()
        except ConnectionClosed:
            if self._closing:
                raise StopAsyncIteration from None
            raise

    # -- publishing ---------------------------------------------------------------------

    async def publish(self, topic, value):
        """Publishes `value` (any Broker value, or a zeek.Event) on `topic`.

        Raises EncodeError for a value or topic that cannot be sent, before sending
        anything. With reconnect=True, waits while the connection is being re-established;
        otherwise raises ConnectionClosed when it is gone. The node answers a message it
        rejects with an error frame, which get() raises later."""
        await self.send_text(encode_message(topic, value))

    async def send_text(self, text):
        """Sends an already encoded frame (see codec.encode_message)."""
        while True:
            if self._terminal is not None or self._closing:
                raise self._ended()
            await self._connected.wait()
            ws = self._ws
            if self._terminal is not None:
                continue
            try:
                await ws.send(text)
                return
            except _compat.ConnectionClosed as e:
                if not self._reconnect or self._closing:
                    code, reason = _compat.close_info(e)
                    raise ConnectionClosed("connection to %s %s" % (self.url, _how(code, reason)),
                                           code, reason) from None
                if ws is self._ws:
                    self._connected.clear()  # the reader is about to notice and redial

    # -- closing ------------------------------------------------------------------------

    async def close(self):
        """Closes the connection (close code 1000) and ends iteration. Messages that
        arrived before remain available to get(), followed by ConnectionClosed."""
        if self._closing:
            return
        self._closing = True
        if self._reader is not None:
            self._reader.cancel()
            await asyncio.gather(self._reader, return_exceptions=True)
        ws = self._ws
        if ws is not None:
            # Keep reading while closing: a full receive buffer would hide the node's close
            # frame; frames that arrive meanwhile (e.g. an error frame for a message just
            # published) are queued while there is room.
            drain = asyncio.ensure_future(self._drain(ws))
            try:
                await ws.close()
            except Exception as e:  # the connection may already be broken
                log.debug("closing %s: %r", self.url, e)
            try:
                await asyncio.wait_for(drain, self.close_timeout)
            except asyncio.TimeoutError:
                pass
        self._finish(ConnectionClosed("the client closed the connection", 1000, ""))

    async def _drain(self, ws):
        while True:
            try:
                text = await ws.recv()
            except _compat.ConnectionClosed:
                return
            item = self._decode(text)
            if isinstance(item, NodeError) and self._on_error is not None:
                await self._deliver(item)
            elif item is not None:
                try:
                    self._queue.put_nowait(item)
                except asyncio.QueueFull:
                    pass

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()
        return False


def _how(code, reason):
    """How a connection ended, for messages."""
    if code is None:
        return "lost (no close frame: the node died or the network failed)"
    return "closed by the node (code %d%s)" % (code, ", %r" % reason if reason else "")


async def _abort(ws):
    """Closes a connection we give up on; it may be broken already."""
    try:
        await asyncio.wait_for(ws.close(), 1.0)
    except Exception:
        pass


class _Connecting:
    """What connect() returns: await it for the client, or use it in `async with`."""

    def __init__(self, client):
        self._client = client

    def __await__(self):
        return self._client._start().__await__()

    async def __aenter__(self):
        return await self._client._start()

    async def __aexit__(self, *exc):
        await self._client.close()
        return False


def connect(url, topics=(), **options):
    """Connects to a node and subscribes to `topics` (prefixes; `[]` publishes only).

    `client = await connect(...)` or `async with connect(...) as client:`. The URL is
    `ws://host:port` or `wss://host:port` (the path /v1/messages/json is added when
    missing). Options (all keyword-only):

    - TLS: `cafile` (CA to trust; default the system's), `certfile`, `keyfile`, `password`
      (a client certificate for mutual TLS), or a ready `ssl` context;
    - `reconnect=False`: re-dial a lost connection (back-off from `reconnect_delay` to
      `reconnect_max_delay` seconds) and re-subscribe; publish() waits meanwhile, and
      what others publish while the client is away is missed. The first connection must
      succeed either way;
    - `on_error`: called with each NodeError instead of raising it from get();
    - `decode_events=True`: deliver Zeek events as zeek.Event;
    - `headers`: extra HTTP headers; `queue_size`, `open_timeout`, `close_timeout`,
      `ping_interval`, `max_message_size`.

    Raises ConnectError if the node cannot be reached or refuses the subscriptions."""
    return _Connecting(Client(url, topics, **options))


__all__ = ["Client", "connect", "BrokerError", "ConnectError", "ConnectionClosed",
           "DecodeError", "EncodeError", "NodeError"]
