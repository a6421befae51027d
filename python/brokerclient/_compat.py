"""The one place that knows which `websockets` release is installed.

Debian bookworm ships websockets 10.4, which has only the "legacy" asyncio client
(`websockets.connect`, headers passed as `extra_headers`). Release 13 added a new asyncio
client (`websockets.asyncio.client.connect`, headers as `additional_headers`), which became
`websockets.connect` in 14 while the legacy one was deprecated. We use the new client where
it exists and the legacy one otherwise; both share the connection methods we call (send,
recv, close) and the ConnectionClosed exception with `rcvd` (the close frame received).
"""

import asyncio

import websockets
import websockets.exceptions

try:
    from websockets.asyncio.client import connect as _connect  # websockets >= 13
    _HEADERS_KEYWORD = "additional_headers"
except ImportError:  # pragma: no cover - depends on the installed release
    _connect = websockets.connect
    _HEADERS_KEYWORD = "extra_headers"

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

    Compression is not offered: Broker's server never negotiates it (spec §2)."""
    kwargs = dict(open_timeout=open_timeout, close_timeout=close_timeout,
                  ping_interval=ping_interval, ping_timeout=ping_timeout,
                  max_size=max_size, compression=None)
    if ssl is not None:
        kwargs["ssl"] = ssl
    if headers:
        kwargs[_HEADERS_KEYWORD] = dict(headers)
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
