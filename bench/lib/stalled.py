"""Consumers that subscribe and then never read again, for bench/slow_consumer.py.

    peer = StalledPeer("127.0.0.1", node_port, ["/benchmark/events"])
    ws = StalledWebSocket("127.0.0.1", ws_port, ["/benchmark/events"])
    ...                      # the node queues for them, applies its policy, drops or cuts
    peer.close(); ws.close()

Both finish their handshake (so the node has registered the subscription) and from then on
leave every byte the node sends in the kernel. A small receive buffer (STALL_RCVBUF) makes
the TCP window close after a few dozen KiB, so the node's own queue for them fills at once.
The peer speaks the native protocol through tests/lib/broker_peer.py (written from the
spec); the WebSocket client is a plain socket: the HTTP upgrade, one masked text frame with
the subscriptions, and the node's ack. Standard library only.
"""

import base64
import json
import os
import socket
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "tests", "lib"))

import broker_peer as bp  # noqa: E402

STALL_RCVBUF = 64 * 1024
TIMEOUT = 10.0
WEB_SOCKET_PATH = "/v1/messages/json"
_OP_TEXT = 0x1
_FIN = 0x80
_MASK = 0x80


class StalledPeer:
    """A native peering whose dialer stops reading after the handshake."""

    def __init__(self, host, port, topics, rcvbuf=STALL_RCVBUF):
        self.peer = bp.RawPeer.dial(host, port, bp.random_id(), list(topics), rcvbuf=rcvbuf)
        self.id_text = bp.id_text(self.peer.own_id)

    def close(self):
        self.peer.close()


def _client_frame(payload):
    """One masked text frame (clients must mask, RFC 6455 §5.3)."""
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", _FIN | _OP_TEXT, _MASK | n)
    elif n < 1 << 16:
        head = struct.pack("!BBH", _FIN | _OP_TEXT, _MASK | 126, n)
    else:
        head = struct.pack("!BBQ", _FIN | _OP_TEXT, _MASK | 127, n)
    mask = os.urandom(4)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def _read_frame(sock, buf):
    """(payload, rest of buf) of the next unmasked server frame."""
    def need(n):
        nonlocal buf
        while len(buf) < n:
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError("the node closed the WebSocket during the handshake")
            buf += chunk
    need(2)
    n = buf[1] & 0x7F
    pos = 2
    if n == 126:
        need(4)
        n, pos = struct.unpack_from("!H", buf, 2)[0], 4
    elif n == 127:
        need(10)
        n, pos = struct.unpack_from("!Q", buf, 2)[0], 10
    need(pos + n)
    return bytes(buf[pos:pos + n]), buf[pos + n:]


class StalledWebSocket:
    """A WebSocket JSON API client that stops reading after the node's ack."""

    def __init__(self, host, port, topics, rcvbuf=STALL_RCVBUF):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            self.sock.settimeout(TIMEOUT)
            self.sock.connect((host, port))
            key = base64.b64encode(os.urandom(16)).decode()
            self.sock.sendall(("GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\n"
                               "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                               "Sec-WebSocket-Version: 13\r\n\r\n"
                               % (WEB_SOCKET_PATH, host, port, key)).encode())
            buf = b""
            while b"\r\n\r\n" not in buf:
                chunk = self.sock.recv(4096)
                if not chunk:
                    raise ConnectionError("the node closed the connection during the upgrade")
                buf += chunk
            head, _, buf = buf.partition(b"\r\n\r\n")
            if not head.startswith(b"HTTP/1.1 101"):
                raise ConnectionError("upgrade refused: %r" % head.split(b"\r\n")[0])
            self.sock.sendall(_client_frame(json.dumps(list(topics)).encode()))
            ack, _ = _read_frame(self.sock, buf)
            if json.loads(ack).get("type") != "ack":
                raise ConnectionError("expected the node's ack, got %r" % ack[:200])
        except BaseException:
            self.sock.close()
            raise

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass
