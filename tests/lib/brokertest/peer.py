"""A raw peer that speaks Broker's native peering protocol (doc/protocol/peering.md; the
section numbers here are that page's).

Small on purpose: framing (§1), the phase-1/2 handshake messages (§3, §4), phase-3 node
messages (§5) and the binary encoding of a few value types (doc/protocol/binary.md: none,
boolean, count, integer, string, vector). Standard library only. Every blocking call has a timeout.

    peer = RawPeer.dial("127.0.0.1", port, P0, ["/t"])   # handshake in either role
    peer.publish("/t", encode_count(1))
    pong = decode_node_message(peer.ping(b"foo")[4:])   # pong["payload"] == b"foo"
"""

import socket
import struct
import time
import uuid

# -- constants (§2, §3.1, §5.1) -----------------------------------------------------------

MAGIC = 0x5A45454B
PROTOCOL_VERSION = 1
DEFAULT_TTL = 16
HEADER_SIZE = 37
CONTROL_TOPIC = b"<$>"
NIL_ID = bytes(16)
# Ping payload with which our nodes ask, right after the handshake, whether the peer speaks
# their origin-v1 extension; a Broker node (like this raw peer) echoes it.
EXT_PROBE = b"BRKEXT?origin-v1"
MAX_FRAME = 64 * 1024 * 1024

# Message types.
DATA, COMMAND, ROUTING_UPDATE, PING, PONG = 1, 2, 3, 4, 5
HELLO, PROBE, VERSION_SELECT, DROP_CONN = 6, 7, 8, 9
ORIGINATOR_SYN, RESPONDER_SYN_ACK, ORIGINATOR_ACK = 10, 11, 12
DATA_EXT = 0x81

TYPE_NAMES = {
    DATA: "data", COMMAND: "command", ROUTING_UPDATE: "routing_update", PING: "ping",
    PONG: "pong", HELLO: "hello", PROBE: "probe", VERSION_SELECT: "version_select",
    DROP_CONN: "drop_conn", ORIGINATOR_SYN: "originator_syn",
    RESPONDER_SYN_ACK: "responder_syn_ack", ORIGINATOR_ACK: "originator_ack",
    DATA_EXT: "data_ext",
}

# Error codes used on the wire (§10).
EC_PEER_INCOMPATIBLE = 2
EC_INVALID_MESSAGE = 20
EC_WRONG_MAGIC_NUMBER = 38
EC_REDUNDANT_CONNECTION = 39

# The btest ids (§12).
P0 = uuid.UUID("00000000-0000-4000-8000-000000000000").bytes
PF = uuid.UUID("ffffffff-ffff-4fff-bfff-ffffffffffff").bytes

DEFAULT_TIMEOUT = 10.0


class ProtocolError(Exception):
    """The remote side sent something this helper did not expect."""


class ConnectionClosed(Exception):
    """The remote side closed the TCP connection."""


def id_text(raw):
    """The 8-4-4-4-12 text form of a 16-byte id (§8)."""
    return str(uuid.UUID(bytes=raw))


def random_id():
    """A random version-4 id, as our nodes generate them."""
    return uuid.uuid4().bytes


# -- varbyte and values (doc/protocol/binary.md §3, §2) ----------------------------------

def encode_varbyte(n):
    if n < 0 or n >= 1 << 32:
        raise ValueError("varbyte out of range: %d" % n)
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def decode_varbyte(buf, pos):
    """Returns (value, new position)."""
    value, shift = 0, 0
    for i in range(5):
        if pos >= len(buf):
            raise ProtocolError("truncated varbyte")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, pos
    raise ProtocolError("varbyte longer than 5 bytes")


def encode_none():
    return b"\x00"


def encode_bool(x):
    return b"\x01" + (b"\x01" if x else b"\x00")


def encode_count(n):
    return b"\x02" + struct.pack(">Q", n)


def encode_integer(n):
    return b"\x03" + struct.pack(">q", n)


def encode_string(s):
    raw = s.encode() if isinstance(s, str) else bytes(s)
    return b"\x05" + encode_varbyte(len(raw)) + raw


def encode_vector(encoded_elements):
    """`encoded_elements`: values already encoded with the functions above."""
    return b"\x0e" + encode_varbyte(len(encoded_elements)) + b"".join(encoded_elements)


class Count(int):
    """A decoded Broker count (distinct from an integer)."""


def decode_value(buf, pos=0):
    """Decodes one value of the supported types; returns (value, new position).

    count -> Count, integer -> int, string -> str (bytes if not UTF-8), vector -> list,
    none -> None, boolean -> bool."""
    if pos >= len(buf):
        raise ProtocolError("truncated value")
    tag = buf[pos]
    pos += 1
    if tag == 0:
        return None, pos
    if tag == 1:
        return buf[pos] != 0, pos + 1
    if tag in (2, 3):
        if pos + 8 > len(buf):
            raise ProtocolError("truncated number")
        fmt = ">Q" if tag == 2 else ">q"
        (n,) = struct.unpack_from(fmt, buf, pos)
        return (Count(n) if tag == 2 else n), pos + 8
    if tag == 5:
        n, pos = decode_varbyte(buf, pos)
        raw = bytes(buf[pos:pos + n])
        if len(raw) != n:
            raise ProtocolError("truncated string")
        try:
            return raw.decode(), pos + n
        except UnicodeDecodeError:
            return raw, pos + n
    if tag == 14:
        n, pos = decode_varbyte(buf, pos)
        xs = []
        for _ in range(n):
            x, pos = decode_value(buf, pos)
            xs.append(x)
        return xs, pos
    raise ProtocolError("unsupported value tag %d" % tag)


def decode_whole_value(buf):
    value, pos = decode_value(buf, 0)
    if pos != len(buf):
        raise ProtocolError("%d trailing bytes after value" % (len(buf) - pos))
    return value


# -- framing and handshake messages (§1, §3, §4) ------------------------------------------

def frame(payload):
    return struct.pack(">I", len(payload)) + payload


def encode_filter(topics):
    out = bytearray(encode_varbyte(len(topics)))
    for t in topics:
        raw = t.encode() if isinstance(t, str) else bytes(t)
        out += encode_varbyte(len(raw)) + raw
    return bytes(out)


def decode_filter(buf, pos=0, exact=True):
    n, pos = decode_varbyte(buf, pos)
    topics = []
    for _ in range(n):
        size, pos = decode_varbyte(buf, pos)
        if pos + size > len(buf):
            raise ProtocolError("filter entry runs past the end")
        topics.append(bytes(buf[pos:pos + size]))
        pos += size
    if exact and pos != len(buf):
        raise ProtocolError("trailing bytes after filter")
    return topics


def hello(sender, min_version=PROTOCOL_VERSION, max_version=PROTOCOL_VERSION, magic=MAGIC):
    return frame(bytes([HELLO]) + struct.pack(">I", magic) + sender
                 + bytes([min_version, max_version]))


def probe(magic=MAGIC):
    return frame(bytes([PROBE]) + struct.pack(">I", magic))


def version_select(sender, version=PROTOCOL_VERSION):
    return frame(bytes([VERSION_SELECT]) + struct.pack(">I", MAGIC) + sender + bytes([version]))


def drop_conn(sender, code, description):
    raw = description.encode()
    return frame(bytes([DROP_CONN]) + struct.pack(">I", MAGIC) + sender + bytes([code])
                 + encode_varbyte(len(raw)) + raw)


def originator_syn(topics):
    return frame(bytes([ORIGINATOR_SYN]) + encode_filter(topics))


def responder_syn_ack(topics):
    return frame(bytes([RESPONDER_SYN_ACK]) + encode_filter(topics))


def originator_ack():
    return frame(bytes([ORIGINATOR_ACK]))


def decode_handshake(payload):
    """A dict with 'type' and the message's fields; raises ProtocolError if malformed."""
    if not payload:
        raise ProtocolError("empty handshake frame")
    tag, body = payload[0], payload[1:]
    msg = {"type": tag, "name": TYPE_NAMES.get(tag, "invalid")}
    if tag in (HELLO, PROBE, VERSION_SELECT, DROP_CONN):
        if len(body) < 4:
            raise ProtocolError("%s too short" % msg["name"])
        (msg["magic"],) = struct.unpack_from(">I", body, 0)
    if tag == HELLO:
        if len(body) < 22:
            raise ProtocolError("hello too short")
        msg["sender"] = bytes(body[4:20])
        msg["min_version"], msg["max_version"] = body[20], body[21]
    elif tag == VERSION_SELECT:
        if len(body) < 21:
            raise ProtocolError("version_select too short")
        msg["sender"] = bytes(body[4:20])
        msg["version"] = body[20]
    elif tag == DROP_CONN:
        if len(body) < 22:
            raise ProtocolError("drop_conn too short")
        msg["sender"] = bytes(body[4:20])
        msg["code"] = body[20]
        size, pos = decode_varbyte(body, 21)
        msg["description"] = bytes(body[pos:pos + size]).decode(errors="replace")
    elif tag in (ORIGINATOR_SYN, RESPONDER_SYN_ACK):
        msg["filter"] = decode_filter(body)
    elif tag not in (PROBE, ORIGINATOR_ACK):
        raise ProtocolError("unexpected handshake tag %d" % tag)
    return msg


# -- phase 3 (§5) ------------------------------------------------------------------------

def node_message(sender, receiver, msg_type, topic, payload, ttl=DEFAULT_TTL):
    raw_topic = topic.encode() if isinstance(topic, str) else bytes(topic)
    return frame(sender + receiver + bytes([msg_type]) + struct.pack(">HH", ttl, len(raw_topic))
                 + raw_topic + payload)


def decode_node_message(payload):
    if len(payload) < HEADER_SIZE:
        raise ProtocolError("node message too short: %d bytes" % len(payload))
    ttl, topic_len = struct.unpack_from(">HH", payload, 33)
    if HEADER_SIZE + topic_len > len(payload):
        raise ProtocolError("invalid topic size")
    return {
        "sender": bytes(payload[0:16]),
        "receiver": bytes(payload[16:32]),
        "type": payload[32],
        "ttl": ttl,
        "topic": bytes(payload[HEADER_SIZE:HEADER_SIZE + topic_len]),
        "payload": bytes(payload[HEADER_SIZE + topic_len:]),
    }


# -- connections ----------------------------------------------------------------------------

def anonymous_tls(server=False):
    """An ssl.SSLContext speaking Broker's default transport: TLS 1.2 with anonymous ECDH
    (cipher AECDH-AES256-SHA at security level 0, curve P-384), no certificates, no checks."""
    import ssl
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER if server else ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_ciphers("AECDH-AES256-SHA@SECLEVEL=0")
    ctx.set_ecdh_curve("secp384r1")
    return ctx


class Connection:
    """One TCP connection that reads and writes whole frames, with timeouts."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = bytearray()

    @classmethod
    def connect(cls, host, port, timeout=DEFAULT_TIMEOUT, rcvbuf=None, tls=None):
        """`rcvbuf`: a small receive buffer makes a peer that stops reading stall quickly.
        `tls`: an ssl.SSLContext to speak TLS with (e.g. anonymous_tls())."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            if rcvbuf is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            sock.settimeout(timeout)
            sock.connect((host, port))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if tls is not None:
                sock = tls.wrap_socket(sock, server_hostname=None)
        except BaseException:
            sock.close()
            raise
        return cls(sock)

    def send(self, raw, timeout=DEFAULT_TIMEOUT):
        self.sock.settimeout(timeout)
        self.sock.sendall(raw)

    def _fill(self, need, deadline):
        while len(self.buf) < need:
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout("timed out waiting for %d bytes (have %d)"
                                     % (need, len(self.buf)))
            self.sock.settimeout(left)
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionClosed("connection closed with %d bytes buffered" % len(self.buf))
            self.buf += chunk

    def recv_frame(self, timeout=DEFAULT_TIMEOUT):
        """The next complete frame, length prefix included."""
        deadline = time.monotonic() + timeout
        self._fill(4, deadline)
        (size,) = struct.unpack_from(">I", self.buf, 0)
        if size > MAX_FRAME:
            raise ProtocolError("frame of %d bytes" % size)
        self._fill(4 + size, deadline)
        raw = bytes(self.buf[:4 + size])
        del self.buf[:4 + size]
        return raw

    def expect_close(self, timeout=DEFAULT_TIMEOUT):
        """Waits for EOF (or a reset); returns the bytes that arrived before it."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout("connection still open")
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                rest = bytes(self.buf)
                self.buf.clear()
                return rest
            self.buf += chunk

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class RawPeer:
    """A peering after a successful handshake: publish, ping, read data."""

    def __init__(self, conn, own_id, remote_id, remote_filter, transcript):
        self.conn = conn
        self.own_id = own_id
        self.remote_id = remote_id
        self.remote_filter = remote_filter
        self.transcript = transcript  # [(direction, raw frame)] of the handshake
        self.received = []  # decoded data values that arrived while waiting for others

    @classmethod
    def dial(cls, host, port, own_id, topics, max_version=PROTOCOL_VERSION,
             timeout=DEFAULT_TIMEOUT, rcvbuf=None, tls=None):
        conn = Connection.connect(host, port, timeout, rcvbuf, tls)
        try:
            return cls.handshake(conn, own_id, topics, max_version, timeout)
        except BaseException:
            conn.close()
            raise

    @classmethod
    def handshake(cls, conn, own_id, topics, max_version=PROTOCOL_VERSION,
                  timeout=DEFAULT_TIMEOUT):
        """Runs the dialer's side of §3.3 in whichever role the ids give us."""
        transcript = []

        def send(raw):
            transcript.append(("out", raw))
            conn.send(raw, timeout)

        def recv():
            raw = conn.recv_frame(timeout)
            transcript.append(("in", raw))
            return raw, decode_handshake(raw[4:])

        send(hello(own_id, PROTOCOL_VERSION, max_version))
        while True:
            raw, msg = recv()
            if msg["type"] == PROBE:
                continue
            if msg["type"] == DROP_CONN:
                raise ProtocolError("drop_conn %d: %s" % (msg["code"], msg["description"]))
            break
        if msg["type"] == HELLO:  # We are the originator (smaller id).
            remote = msg["sender"]
            send(version_select(own_id) + originator_syn(topics))
            raw, msg = recv()
            if msg["type"] != RESPONDER_SYN_ACK:
                raise ProtocolError("expected responder_syn_ack, got %s" % msg["name"])
            send(originator_ack())
        elif msg["type"] == VERSION_SELECT:  # We are the responder.
            remote = msg["sender"]
            raw, msg = recv()
            if msg["type"] != ORIGINATOR_SYN:
                raise ProtocolError("expected originator_syn, got %s" % msg["name"])
            send(responder_syn_ack(topics))
            raw, ack = recv()
            if ack["type"] != ORIGINATOR_ACK:
                raise ProtocolError("expected originator_ack, got %s" % ack["name"])
        else:
            raise ProtocolError("unexpected %s after hello" % msg["name"])
        return cls(conn, own_id, remote, msg["filter"], transcript)

    # -- sending --------------------------------------------------------------------------

    def data_frame(self, topic, encoded_value, receiver=NIL_ID, ttl=DEFAULT_TTL):
        return node_message(self.own_id, receiver, DATA, topic, encoded_value, ttl)

    def publish(self, topic, encoded_value, ttl=DEFAULT_TTL):
        self.conn.send(self.data_frame(topic, encoded_value, ttl=ttl))

    def publish_many(self, topic, encoded_values):
        self.conn.send(b"".join(self.data_frame(topic, v) for v in encoded_values))

    def send_raw(self, raw):
        self.conn.send(raw)

    # -- receiving ------------------------------------------------------------------------

    def next_message(self, timeout=DEFAULT_TIMEOUT):
        """The next phase-3 frame, decoded; answers pings (BYE included) on the way."""
        raw = self.conn.recv_frame(timeout)
        msg = decode_node_message(raw[4:])
        msg["raw"] = raw
        if msg["type"] == PING and msg["sender"] == self.remote_id:
            self.conn.send(node_message(self.own_id, self.remote_id, PONG, CONTROL_TOPIC,
                                        msg["payload"]))
        return msg

    def ping(self, payload, ttl=DEFAULT_TTL, timeout=DEFAULT_TIMEOUT):
        """Sends a ping and returns the raw frame of the pong that echoes `payload`."""
        self.conn.send(node_message(self.own_id, self.remote_id, PING, CONTROL_TOPIC, payload,
                                    ttl))
        deadline = time.monotonic() + timeout
        while True:
            msg = self.next_message(max(0.0, deadline - time.monotonic()))
            if msg["type"] == PONG and msg["payload"] == payload:
                return msg["raw"]
            if msg["type"] == DATA:
                self.received.append((msg["topic"], decode_whole_value(msg["payload"])))

    def receive_data(self, count, timeout=DEFAULT_TIMEOUT):
        """`count` data messages as (topic, value), in arrival order."""
        deadline = time.monotonic() + timeout
        while len(self.received) < count:
            msg = self.next_message(max(0.0, deadline - time.monotonic()))
            if msg["type"] == DATA:
                self.received.append((msg["topic"], decode_whole_value(msg["payload"])))
        result, self.received = self.received[:count], self.received[count:]
        return result

    def close(self):
        self.conn.close()
