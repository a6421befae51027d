"""A blocking WebSocket client written from RFC 6455, for what library clients hide.

Library clients read their socket in the background, mask every frame and answer pings and
close frames themselves. These tests sometimes need the opposite: a client that never reads
(a slow consumer), that puts a ping between two fragments, or that checks the server's
close frame byte by byte. RawClient does exactly what it is told and nothing else.

    c = RawClient(port)                    # connects and performs the HTTP upgrade
    c.send_text('["/test"]')
    opcode, payload = c.recv_message()     # (TEXT, b'{"type":"ack",...}')
"""

import base64
import hashlib
import os
import select
import socket
import struct

from .net import LOCALHOST, WEB_SOCKET_PATH

CONT, TEXT, BINARY, CLOSE, PING, PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA

WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
DEFAULT_TIMEOUT = 10.0


class ProtocolError(AssertionError):
    pass


def accept_key(key):
    """The Sec-WebSocket-Accept value a server must answer `key` with."""
    digest = hashlib.sha1((key + WS_GUID).encode()).digest()
    return base64.b64encode(digest).decode()


def parse_http_response(raw):
    """Splits a raw HTTP response into (status code, reason, headers dict lower-cased, body).

    Header names map to lists of values, in order."""
    head, sep, body = raw.partition(b"\r\n\r\n")
    if not sep:
        raise ProtocolError("no end of the HTTP header block in %r" % raw[:200])
    lines = head.decode("latin-1").split("\r\n")
    version, code, reason = (lines[0].split(" ", 2) + [""])[:3]
    if not version.startswith("HTTP/1."):
        raise ProtocolError("not an HTTP status line: %r" % lines[0])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers.setdefault(name.strip().lower(), []).append(value.strip())
    return int(code), reason, headers, body


def http_exchange(port, request, timeout=DEFAULT_TIMEOUT, host=LOCALHOST, ssl_context=None):
    """Sends raw `request` bytes and returns everything the server sends until it closes
    (over TLS with `ssl_context`)."""
    with socket.create_connection((host, port), timeout=timeout) as raw:
        s = ssl_context.wrap_socket(raw, server_hostname=host) if ssl_context else raw
        s.sendall(request)
        chunks = []
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks)


def upgrade_request(path=WEB_SOCKET_PATH, key=None, extra_headers=(), host=LOCALHOST):
    """An RFC 6455 upgrade request; returns (bytes, key)."""
    key = key or base64.b64encode(os.urandom(16)).decode()
    lines = ["GET %s HTTP/1.1" % path, "Host: %s" % host, "Upgrade: websocket",
             "Connection: Upgrade", "Sec-WebSocket-Key: %s" % key, "Sec-WebSocket-Version: 13"]
    lines += ["%s: %s" % h for h in extra_headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode(), key


def encode_frame(opcode, payload, fin=True, mask=True):
    """One client frame as bytes: 7-, 16- or 64-bit length, masked with a random key or not."""
    if isinstance(payload, str):
        payload = payload.encode()
    head = bytes([(0x80 if fin else 0) | opcode])
    mask_bit = 0x80 if mask else 0
    n = len(payload)
    if n < 126:
        head += bytes([mask_bit | n])
    elif n < 65536:
        head += bytes([mask_bit | 126]) + struct.pack("!H", n)
    else:
        head += bytes([mask_bit | 127]) + struct.pack("!Q", n)
    if mask:
        key = os.urandom(4)
        head += key
        payload = bytes(b ^ key[i % 4] for i, b in enumerate(payload))
    return head + payload


class RawClient:
    """One WebSocket connection driven frame by frame (see the module comment)."""

    def __init__(self, port, path=WEB_SOCKET_PATH, rcvbuf=None, timeout=DEFAULT_TIMEOUT,
                 extra_headers=(), host=LOCALHOST, early=b"", ssl_context=None):
        """`early` is sent in the same write as the upgrade request, before the answer
        (e.g. the first frames, as a client that does not wait for the 101 would);
        `ssl_context` makes it a wss:// client."""
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf is not None:
            # Before connect(), so that the window scale the kernel offers stays small.
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.timeout = timeout
        self.sock.settimeout(timeout)
        self.sock.connect((host, port))
        if ssl_context is not None:
            self.sock = ssl_context.wrap_socket(self.sock, server_hostname=host)
        self.buf = b""
        request, key = upgrade_request(path, extra_headers=extra_headers, host=host)
        self.sock.sendall(request + early)
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        end = self.buf.index(b"\r\n\r\n") + 4
        self.response = self.buf[:end]
        self.buf = self.buf[end:]
        code, _, self.headers, _ = parse_http_response(self.response)
        if code != 101:
            raise ProtocolError("upgrade refused: %r" % self.response)
        if self.headers.get("sec-websocket-accept") != [accept_key(key)]:
            raise ProtocolError("wrong Sec-WebSocket-Accept in %r" % self.response)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    # -- sending ----------------------------------------------------------------------

    def send_frame(self, opcode, payload, fin=True, mask=True):
        """Sends one frame; mask=False sends it unmasked, as RFC 6455 forbids but Broker
        accepts."""
        self.sock.sendall(encode_frame(opcode, payload, fin, mask))

    def send_text(self, text):
        self.send_frame(TEXT, text)

    def send_close(self, code=1000, reason=b""):
        self.send_frame(CLOSE, struct.pack("!H", code) + reason)

    # -- receiving --------------------------------------------------------------------

    def _fill(self):
        try:
            chunk = self.sock.recv(65536)
        except socket.timeout:
            raise ProtocolError("timed out after %.1f s waiting for the server"
                                % self.sock.gettimeout())
        if not chunk:
            raise EOFError("the server closed the TCP connection")
        self.buf += chunk

    def _take(self, n):
        while len(self.buf) < n:
            self._fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv_frame(self):
        """The next frame as (fin, opcode, payload). Server frames must not be masked."""
        b0, b1 = self._take(2)
        if b1 & 0x80:
            raise ProtocolError("the server sent a masked frame")
        if b0 & 0x70:
            raise ProtocolError("the server set RSV bits (an extension nobody negotiated)")
        n = b1 & 0x7F
        if n == 126:
            n = struct.unpack("!H", self._take(2))[0]
        elif n == 127:
            n = struct.unpack("!Q", self._take(8))[0]
        return bool(b0 & 0x80), b0 & 0x0F, self._take(n)

    def recv_message(self):
        """The next message or control frame as (opcode, payload), fragments joined."""
        fin, opcode, payload = self.recv_frame()
        if opcode >= CLOSE or fin:
            return opcode, payload
        parts = [payload]
        while True:
            fin, op, more = self.recv_frame()
            if op >= CLOSE:
                raise ProtocolError("control frame 0x%x inside a server message" % op)
            if op != CONT:
                raise ProtocolError("opcode 0x%x inside a fragmented message" % op)
            parts.append(more)
            if fin:
                return opcode, b"".join(parts)

    def recv_text(self):
        opcode, payload = self.recv_message()
        if opcode != TEXT:
            raise ProtocolError("expected a text message, got opcode 0x%x: %r"
                                % (opcode, payload[:200]))
        return payload.decode()

    def poll_text(self, idle):
        """The next text message, or None if no byte at all arrives within `idle` seconds."""
        if not self.buf:
            self.sock.settimeout(idle)
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                return None
            finally:
                self.sock.settimeout(self.timeout)
            if not chunk:
                raise EOFError("the server closed the TCP connection")
            self.buf += chunk
        return self.recv_text()

    def _buffered_frame_size(self):
        """The size of the first frame in the buffer if all of it is there, else None."""
        if len(self.buf) < 2:
            return None
        n, head = self.buf[1] & 0x7F, 2
        if n == 126:
            if len(self.buf) < 4:
                return None
            n, head = struct.unpack("!H", self.buf[2:4])[0], 4
        elif n == 127:
            if len(self.buf) < 10:
                return None
            n, head = struct.unpack("!Q", self.buf[2:10])[0], 10
        if self.buf[1] & 0x80:
            head += 4
        return head + n if len(self.buf) >= head + n else None

    def poll_frames(self, wait):
        """Every frame complete in the buffer after waiting at most `wait` seconds for more
        bytes, as [(fin, opcode, payload)]; an empty list if none is. Never blocks longer
        than `wait` (a frame that is only partly there stays buffered). EOFError once the
        server closed TCP."""
        if self._buffered_frame_size() is None:
            ready, _, _ = select.select([self.sock], [], [], wait)
            if ready:
                try:
                    chunk = self.sock.recv(65536, socket.MSG_DONTWAIT)
                except BlockingIOError:
                    return []
                if not chunk:
                    raise EOFError("the server closed the TCP connection")
                self.buf += chunk
        frames = []
        while self._buffered_frame_size() is not None:
            frames.append(self.recv_frame())
        return frames

    def expect_eof(self):
        """Returns True if the server closes TCP without sending anything more."""
        try:
            self._fill()
        except EOFError:
            return True
        return False


def close_code(payload):
    """(code, reason) of a close frame payload; (None, '') for an empty one."""
    if len(payload) < 2:
        return None, ""
    return struct.unpack("!H", payload[:2])[0], payload[2:].decode(errors="replace")
