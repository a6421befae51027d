"""The one place that knows which `websockets` release is installed.

Debian bookworm ships websockets 10.4, whose `websockets.connect` is the "legacy" asyncio
client (headers passed as `extra_headers`). Release 13 added a new asyncio client, which
became `websockets.connect` in 14 (headers as `additional_headers`) while the legacy one was
deprecated. We use whatever `websockets.connect` is: in 13.x the new client still dropped
messages buffered when the server closed (py.errors catches that), the legacy one did not.
Both share the connection methods we call (send, recv, close) and the ConnectionClosed
exception with `rcvd` (the close frame received).
"""

import asyncio
import ssl as ssl_module

import websockets
import websockets.exceptions

_connect = websockets.connect
try:
    from websockets.asyncio.client import connect as _new_connect  # websockets >= 13
except ImportError:  # pragma: no cover - depends on the installed release
    _new_connect = None
_HEADERS_KEYWORD = "additional_headers" if _connect is _new_connect else "extra_headers"

from .errors import ConnectError

#: What a send or recv on a closed connection raises, in every release.
ConnectionClosed = websockets.exceptions.ConnectionClosed

VERSION = getattr(websockets, "__version__", "unknown")


def close_info(exc):
    """(code, reason) of the close frame the server sent, or (None, None)."""
    rcvd = getattr(exc, "rcvd", None)
    if rcvd is None:
        return None, None
    return rcvd.code, rcvd.reason


async def open_connection(url, *, ssl=None, headers=None, open_timeout, close_timeout,
                          ping_interval, ping_timeout, max_size):
    """An open WebSocket connection to `url`; raises ConnectError naming the reason.

    Compression is not offered: Broker's server never negotiates it (§2 of
    doc/protocol/websocket.md in the broker repository)."""
    kwargs = dict(open_timeout=open_timeout, close_timeout=close_timeout,
                  ping_interval=ping_interval, ping_timeout=ping_timeout,
                  max_size=max_size, compression=None)
    if ssl is not None:
        kwargs["ssl"] = ssl
    if headers:
        kwargs[_HEADERS_KEYWORD] = dict(headers)
    try:
        return await _open_connection(url, kwargs, open_timeout)
    except ConnectError as e:
        hint = _tls_hint(url, e.__cause__)
        if hint is None:
            raise
        raise ConnectError("%s: %s (%s)" % (url, hint, e.__cause__)) from e.__cause__


def _tls_hint(url, exc):
    """What a failed connection says when only one side speaks TLS, or None."""
    plain = url.startswith("ws://")
    if plain and isinstance(exc, websockets.exceptions.InvalidHandshake) \
            and "valid HTTP response" in str(exc):
        # A TLS server drops a plain request without a word.
        return ("the server closed the connection without an HTTP answer: does it expect "
                "TLS? A node with broker.disable-ssl=false serves wss://")
    if not plain and isinstance(exc, ssl_module.SSLError) \
            and getattr(exc, "reason", "") in ("WRONG_VERSION_NUMBER", "HTTP_REQUEST",
                                                "RECORD_LAYER_FAILURE"):
        return ("the server does not speak TLS: a node with broker.disable-ssl=true "
                "serves ws://")
    return None


async def _open_connection(url, kwargs, open_timeout):
    try:
        return await _connect(url, **kwargs)
    except asyncio.TimeoutError:
        raise ConnectError("%s: no WebSocket handshake within %s s" % (url, open_timeout))
    except websockets.exceptions.InvalidURI as e:
        raise ConnectError("invalid URL %r: %s" % (url, e)) from None
    except websockets.exceptions.InvalidHandshake as e:
        # The underlying reason (e.g. a TLS alert refusing our certificate) is the cause.
        detail = " (%s)" % e.__cause__ if e.__cause__ is not None else ""
        raise ConnectError("%s refused the WebSocket upgrade: %s%s" % (url, e, detail)) from e
    except OSError as e:  # refused, unreachable, TLS failures (ssl.SSLError)
        raise ConnectError("cannot connect to %s: %s" % (url, e)) from e
    except (EOFError, websockets.exceptions.WebSocketException) as e:
        # Some releases (13.x) let a connection closed mid-handshake escape as EOFError.
        raise ConnectError("%s failed the WebSocket handshake: %s" % (url, e)) from e
