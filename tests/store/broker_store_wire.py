"""Zeek Broker's data-store commands, byte by byte (doc/protocol/stores.md), for system tests
that play a Broker node with tests/lib/brokertest/peer.py.

A command is the payload of a command frame (type 2): seq u64, sender entity, receiver
entity, kind u8, fields. An entity is a 16-byte endpoint id plus an object id (u64). Values
use brokertest.peer's encoders (none, boolean, count, integer, string, vector).

    payload = encode_command(0, (me, 7), NIL_ENTITY, NACK, seqs=[0])
    peer.send_raw(node_message(me, NIL_ID, COMMAND, master_topic("s"), payload))
    cmd = decode_command(frame["payload"])      # a dict: kind, seq, sender, receiver, fields
"""

import struct

from brokertest.peer import (COMMAND, NIL_ID, Count, ProtocolError,  # noqa: F401
                            decode_value, decode_varbyte, encode_varbyte)

# Kinds, in Broker's order.
PUT, PUT_UNIQUE, PUT_UNIQUE_RESULT, ERASE, EXPIRE, ADD, SUBTRACT, CLEAR = range(8)
ATTACH_WRITER, KEEPALIVE, CUMULATIVE_ACK, NACK, ACK_CLONE, RETRANSMIT_FAILED = range(8, 14)

KIND_NAMES = ["put", "put_unique", "put_unique_result", "erase", "expire", "add", "subtract",
              "clear", "attach_writer", "keepalive", "cumulative_ack", "nack", "ack_clone",
              "retransmit_failed"]

NIL_ENTITY = (NIL_ID, 0)


def master_topic(store):
    return "%s/<$>/data/master" % store


def clone_topic(store):
    return "%s/<$>/data/clone" % store


def entity(e):
    endpoint, obj = e
    return bytes(endpoint) + struct.pack(">Q", obj)


def opt_timespan(ns):
    return b"\x00" if ns is None else b"\x01" + struct.pack(">q", ns)


def encode_command(cmd_seq, sender, receiver, kind, **f):
    """`f` holds the kind's fields; values (key, value) are already encoded bytes."""
    out = struct.pack(">Q", cmd_seq) + entity(sender) + entity(receiver) + bytes([kind])
    if kind == PUT:
        out += f["key"] + f["value"] + opt_timespan(f.get("expiry")) + entity(f["publisher"])
    elif kind == PUT_UNIQUE:
        out += (f["key"] + f["value"] + opt_timespan(f.get("expiry")) + entity(f["who"])
                + struct.pack(">Q", f["req_id"]) + entity(f["publisher"]))
    elif kind == PUT_UNIQUE_RESULT:
        out += (bytes([1 if f["inserted"] else 0]) + entity(f["who"])
                + struct.pack(">Q", f["req_id"]) + entity(f["publisher"]))
    elif kind in (ERASE, EXPIRE):
        out += f["key"] + entity(f["publisher"])
    elif kind == ADD:
        out += (f["key"] + f["value"] + bytes([f["init_type"]]) + opt_timespan(f.get("expiry"))
                + entity(f["publisher"]))
    elif kind == SUBTRACT:
        out += f["key"] + f["value"] + opt_timespan(f.get("expiry")) + entity(f["publisher"])
    elif kind == CLEAR:
        out += entity(f["publisher"])
    elif kind == ATTACH_WRITER:
        out += struct.pack(">QH", f["offset"], f["heartbeat_interval"])
    elif kind in (KEEPALIVE, CUMULATIVE_ACK, RETRANSMIT_FAILED):
        out += struct.pack(">Q", f["seq"])
    elif kind == NACK:
        out += encode_varbyte(len(f["seqs"])) + b"".join(struct.pack(">Q", s) for s in f["seqs"])
    elif kind == ACK_CLONE:
        out += struct.pack(">QH", f["offset"], f["heartbeat_interval"])
        out += encode_varbyte(len(f["state"]))
        for k, v in f["state"]:
            out += k + v
    else:
        raise ValueError("unknown kind %d" % kind)
    return out


class _Reader:
    def __init__(self, buf):
        self.buf = buf
        self.pos = 0

    def take(self, n):
        if self.pos + n > len(self.buf):
            raise ProtocolError("truncated command at offset %d" % self.pos)
        raw = self.buf[self.pos:self.pos + n]
        self.pos += n
        return raw

    def u8(self):
        return self.take(1)[0]

    def u16(self):
        return struct.unpack(">H", self.take(2))[0]

    def u64(self):
        return struct.unpack(">Q", self.take(8))[0]

    def entity(self):
        return (bytes(self.take(16)), self.u64())

    def expiry(self):
        return struct.unpack(">q", self.take(8))[0] if self.u8() else None

    def value(self):
        value, self.pos = decode_value(self.buf, self.pos)
        return value

    def count(self):
        n, self.pos = decode_varbyte(self.buf, self.pos)
        return n


def decode_command(payload):
    """A dict with kind (name), seq, sender, receiver and the kind's fields (decoded values)."""
    r = _Reader(bytes(payload))
    cmd = {"seq": r.u64(), "sender": r.entity(), "receiver": r.entity()}
    kind = r.u8()
    if kind >= len(KIND_NAMES):
        raise ProtocolError("unknown kind %d" % kind)
    cmd["kind"] = KIND_NAMES[kind]
    if kind == PUT:
        cmd.update(key=r.value(), value=r.value(), expiry=r.expiry(), publisher=r.entity())
    elif kind == PUT_UNIQUE:
        cmd.update(key=r.value(), value=r.value(), expiry=r.expiry(), who=r.entity(),
                   req_id=r.u64(), publisher=r.entity())
    elif kind == PUT_UNIQUE_RESULT:
        cmd.update(inserted=bool(r.u8()), who=r.entity(), req_id=r.u64(), publisher=r.entity())
    elif kind in (ERASE, EXPIRE):
        cmd.update(key=r.value(), publisher=r.entity())
    elif kind == ADD:
        cmd.update(key=r.value(), value=r.value(), init_type=r.u8(), expiry=r.expiry(),
                   publisher=r.entity())
    elif kind == SUBTRACT:
        cmd.update(key=r.value(), value=r.value(), expiry=r.expiry(), publisher=r.entity())
    elif kind == CLEAR:
        cmd.update(publisher=r.entity())
    elif kind == ATTACH_WRITER:
        cmd.update(offset=r.u64(), heartbeat_interval=r.u16())
    elif kind in (KEEPALIVE, CUMULATIVE_ACK, RETRANSMIT_FAILED):
        cmd.update(seq_field=r.u64())
    elif kind == NACK:
        cmd.update(seqs=[r.u64() for _ in range(r.count())])
    elif kind == ACK_CLONE:
        cmd.update(offset=r.u64(), heartbeat_interval=r.u16())
        cmd["state"] = [(r.value(), r.value()) for _ in range(r.count())]
    if r.pos != len(r.buf):
        raise ProtocolError("%d trailing bytes" % (len(r.buf) - r.pos))
    return cmd
