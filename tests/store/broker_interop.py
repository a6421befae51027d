#!/usr/bin/env python3
"""System test: our stores against a Zeek Broker node simulated from byte-exact frames.

A raw peer (tests/lib/brokertest/peer.py) plays a Broker node, and broker_store_wire.py spells
out Broker's store commands byte by byte (doc/protocol/stores.md):

  1. as a Broker clone, it attaches to a broker-node's master, gets the snapshot, writes,
     gets the updates and put_unique's verdict;
  2. as a Broker master, it serves a broker-store clone: snapshot, updates, the clone's
     writes and put_unique, and a re-attach after a lost update.

Malformed commands sent in between must be dropped without harm.

Usage: broker_interop.py <broker-node> <broker-store>
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.checks import check, run_tests  # noqa: E402
from brokertest.net import addr  # noqa: E402
from brokertest.nodes import Node  # noqa: E402
from brokertest.peer import (COMMAND, NIL_ID, RawPeer, encode_count,  # noqa: E402
                             encode_integer, encode_string, node_message, random_id)
from brokertest.procs import Cleanup  # noqa: E402
from brokertest.store import Tool, typed  # noqa: E402
from broker_store_wire import (ACK_CLONE, ATTACH_WRITER, CUMULATIVE_ACK, KEEPALIVE,  # noqa: E402
                               NACK, NIL_ENTITY, PUT, PUT_UNIQUE, PUT_UNIQUE_RESULT,
                               RETRANSMIT_FAILED, clone_topic, decode_command, encode_command,
                               master_topic)

STORE = "interop"
WAIT = 15.0

# Garbage a Broker node could (but would not) send: each must be dropped and counted.
GARBAGE = [
    b"",
    b"\x00" * 10,
    b"\x00" * 56 + b"\xee",                     # Unknown kind.
    b"\x00" * 56 + b"\x0b\xff\xff\xff\xff\x0f",  # A nack claiming 2^32-1 entries.
    b"\x00" * 56 + b"\x0c" + b"\x00" * 10 + b"\x7f",  # An ack_clone claiming 127 entries.
    b"\xff" * 300,
]


def wait_stderr(proc, text, timeout=WAIT):
    """Waits until a line of the process's stderr contains `text`."""
    proc.wait_for(lambda l: text in l, timeout, "a stderr line with %r" % text, stderr=True)


class BrokerPeer:
    """A RawPeer that sends and awaits store commands."""

    def __init__(self, raw):
        self.raw = raw
        self.me = raw.own_id
        self.node = raw.remote_id

    def send(self, topic, payload, unicast=False):
        receiver = self.node if unicast else NIL_ID
        self.raw.send_raw(node_message(self.me, receiver, COMMAND, topic, payload))

    def expect(self, pred, what, timeout=WAIT, on_command=None):
        """The next command frame (raw frame dict, decoded command) that satisfies `pred`;
        `on_command` sees every command on the way."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            check(left > 0, "timed out waiting for %s" % what)
            try:
                msg = self.raw.next_message(left)
            except OSError:
                continue
            if msg["type"] != COMMAND:
                continue
            cmd = decode_command(msg["payload"])
            if on_command is not None:
                on_command(cmd)
            if pred(cmd):
                return msg, cmd


def test_broker_clone_attaches_to_our_master(node_bin, tool_bin):
    """a Broker clone attaches to our master: snapshot, writes, updates, put_unique"""
    with Cleanup() as cleanup:
        a = cleanup.add(Node(node_bin, ["--master-stores", STORE], "A"))
        a.wait_for(lambda l: l == "store master " + STORE, what="the master")
        t = cleanup.add(Tool(tool_bin, STORE, ["--peer", addr(a.port)], "T"))
        t.ok('put k1 "v1"')
        t.ok("put n 5c")
        t.ok("wait-get n 5c 10s")
        raw = cleanup.add(RawPeer.dial("127.0.0.1", a.port, random_id(),
                                               [clone_topic(STORE)]))
        b = BrokerPeer(raw)
        clone = (b.me, 7)
        mt, ct = master_topic(STORE), clone_topic(STORE)
        # 1. Attach: nack{[0]} -> ack_clone with the snapshot, keys ascending.
        b.send(mt, encode_command(0, clone, NIL_ENTITY, NACK, seqs=[0]))
        frame, ack = b.expect(lambda c: c["kind"] == "ack_clone" and c["receiver"] == clone,
                              "ack_clone")
        master = ack["sender"]
        offset = ack["offset"]
        check(master[0] == b.node, "the master's entity is on the node: %r" % (master,))
        check(frame["topic"] == ct.encode(), "ack_clone on the clone topic")
        state = [(encode_string("k1"), encode_string("v1")), (encode_string("n"), encode_count(5))]
        check(frame["payload"] == encode_command(offset, master, clone, ACK_CLONE, offset=offset,
                                                 heartbeat_interval=10, state=state),
              "ack_clone bytes: %s" % frame["payload"].hex())
        # 2. Confirm; open the write channel: the master acks the writer's offset.
        b.send(mt, encode_command(0, clone, master, CUMULATIVE_ACK, seq=offset), unicast=True)
        b.send(mt, encode_command(0, clone, master, ATTACH_WRITER, offset=1,
                                  heartbeat_interval=5), unicast=True)
        frame, _ = b.expect(lambda c: c["kind"] == "cumulative_ack" and c["receiver"] == clone,
                            "the writer's ack")
        check(frame["payload"] == encode_command(0, master, clone, CUMULATIVE_ACK, seq=1),
              "writer ack bytes: %s" % frame["payload"].hex())
        for g in GARBAGE:
            b.send(mt, g)
        # 3. A write: applied, and broadcast as the next update.
        b.send(mt, encode_command(2, clone, master, PUT, key=encode_string("k2"),
                                  value=encode_count(9), publisher=clone), unicast=True)
        frame, _ = b.expect(lambda c: c["kind"] == "put" and c["key"] == "k2", "the put of k2")
        check(frame["payload"] == encode_command(offset + 1, master, NIL_ENTITY, PUT,
                                                 key=encode_string("k2"), value=encode_count(9),
                                                 publisher=clone),
              "update bytes: %s" % frame["payload"].hex())
        t.ok("wait-get k2 9c 10s")
        # 4. Another clone's write reaches us as an update. That clone (ours) asks for the
        #    master's verdict: its answer is a put_unique_result for another `who`, which a
        #    Broker clone ignores (doc/protocol/stores.md §5).
        t.ok('put k3 "x"')
        _, upd = b.expect(lambda c: c["kind"] == "put" and c["key"] == "k3", "the put of k3")
        check(upd["seq"] == offset + 2 and upd["value"] == "x" and upd["sender"] == master,
              "k3's update: %r" % upd)
        _, other = b.expect(lambda c: c["kind"] == "put_unique_result", "T's verdict")
        check(other["seq"] == offset + 3 and other["who"] != clone and other["inserted"]
              and other["publisher"] == (b.node, 0), "the verdict for T: %r" % other)
        b.send(mt, encode_command(0, clone, master, CUMULATIVE_ACK, seq=offset + 3),
               unicast=True)
        # 5. put_unique of a taken key: the verdict comes through the channel.
        b.send(mt, encode_command(3, clone, master, PUT_UNIQUE, key=encode_string("k1"),
                                  value=encode_string("other"), who=clone, req_id=42,
                                  publisher=clone), unicast=True)
        frame, _ = b.expect(lambda c: c["kind"] == "put_unique_result", "put_unique_result")
        check(frame["payload"] == encode_command(offset + 4, master, NIL_ENTITY,
                                                 PUT_UNIQUE_RESULT, inserted=False, who=clone,
                                                 req_id=42, publisher=master),
              "verdict bytes: %s" % frame["payload"].hex())
        check(t.value("get k1") == typed("string", "v1"), "k1 kept its value")
        # 6. Keepalives carry the last sequence number.
        _, alive = b.expect(lambda c: c["kind"] == "keepalive", "a keepalive")
        check(alive["seq_field"] == offset + 4 and alive["receiver"] == NIL_ENTITY,
              "keepalive: %r" % alive)
        # The garbage was dropped and logged; the node runs on.
        wait_stderr(a, "dropped a malformed command")
        check(a.alive(), "the node is still running")


def test_our_clone_attaches_to_broker_master(node_bin, tool_bin):
    """our clone attaches to a Broker master: snapshot, updates, writes, put_unique, re-attach"""
    with Cleanup() as cleanup:
        t = cleanup.add(Tool(tool_bin, STORE, ["--ready-timeout=0"], "T", listen=True))
        raw = cleanup.add(RawPeer.dial("127.0.0.1", t.port, random_id(),
                                               [master_topic(STORE)]))
        b = BrokerPeer(raw)
        master = (b.me, 42)
        mt, ct = master_topic(STORE), clone_topic(STORE)
        # 1. The clone asks to attach, from its reader entity, to no one in particular.
        frame, req = b.expect(lambda c: c["kind"] == "nack", "the attach request")
        reader = req["sender"]
        check(reader[0] == b.node, "the reader entity is on the clone's node")
        check(frame["topic"] == mt.encode(), "nack{0} on the master topic")
        check(frame["payload"] == encode_command(0, reader, NIL_ENTITY, NACK, seqs=[0]),
              "attach bytes: %s" % frame["payload"].hex())
        # 2. ack_clone (offset 1, 5 ticks): the clone acks and opens its write channel.
        state = [(encode_string("a"), encode_string("alpha")), (encode_string("n"),
                                                                 encode_count(3))]
        b.send(ct, encode_command(1, master, reader, ACK_CLONE, offset=1, heartbeat_interval=5,
                                  state=state), unicast=True)
        writer = (b.node, reader[1] - 1)
        seen = {}

        def record(c):
            seen.setdefault(c["kind"], []).append(c)

        frame, _ = b.expect(lambda c: c["kind"] == "attach_writer", "attach_writer",
                            on_command=record)
        # One tick: the tool's heartbeat interval (100 ms) in 100 ms ticks.
        check(frame["payload"] == encode_command(0, writer, master, ATTACH_WRITER, offset=1,
                                                 heartbeat_interval=1),
              "attach_writer bytes: %s" % frame["payload"].hex())
        acks = seen.get("cumulative_ack", [])
        check(len(acks) >= 1 and acks[0]["sender"] == reader and acks[0]["receiver"] == master
              and acks[0]["seq_field"] == 1, "the reader acked the handshake first: %r" % acks)
        t.ok('wait-get a "alpha" 10s')
        check(t.value("get n") == typed("count", 3), "n from the snapshot")
        # 3. Garbage on the clone topic changes nothing.
        for g in GARBAGE:
            b.send(ct, g)
        # 4. The writer, once acked, sends the clone's writes in order, each followed by
        #    the tool's verdict request: a put_unique_result, which Broker's master ignores.
        b.send(ct, encode_command(0, master, writer, CUMULATIVE_ACK, seq=1), unicast=True)
        t.send("put b 7")
        frame, w = b.expect(lambda c: c["kind"] == "put", "the clone's write")
        check(w["sender"] == writer and w["receiver"] == master and w["seq"] == 2,
              "the write: %r" % w)
        check(frame["payload"] == encode_command(2, writer, master, PUT, key=encode_string("b"),
                                                 value=encode_integer(7),
                                                 publisher=w["publisher"]),
              "write bytes: %s" % frame["payload"].hex())
        check(w["publisher"][0] == b.node, "the publisher is the clone's endpoint")
        frame, vr = b.expect(lambda c: c["kind"] == "put_unique_result", "the verdict request")
        check(frame["payload"] == encode_command(3, writer, master, PUT_UNIQUE_RESULT,
                                                 inserted=False, who=writer,
                                                 req_id=vr["req_id"], publisher=writer),
              "verdict request bytes: %s" % frame["payload"].hex())
        # 5. The master's update comes back, then its ack of both: without an answer, the
        #    tool reports the write as acknowledged, and the clone already holds it.
        b.send(ct, encode_command(2, master, NIL_ENTITY, PUT, key=encode_string("b"),
                                  value=encode_integer(7), publisher=w["publisher"]))
        b.send(ct, encode_command(0, master, writer, CUMULATIVE_ACK, seq=3), unicast=True)
        results = t.wait_results(t.sent)
        check(results[-1] == {"op": "put", "ok": True, "verdict": "acknowledged"},
              "a Broker master's verdict: %r" % results[-1])
        check(t.value("get b") == typed("integer", 7), "read your write")
        # 6. put_unique: who is the writer; the verdict arrives as an update.
        t.send("put_unique c 1")
        _, pu = b.expect(lambda c: c["kind"] == "put_unique", "the put_unique")
        check(pu["who"] == writer and pu["seq"] == 4 and pu["key"] == "c", "put_unique: %r" % pu)
        b.send(ct, encode_command(3, master, NIL_ENTITY, PUT, key=encode_string("c"),
                                  value=encode_integer(1), publisher=pu["publisher"]))
        b.send(ct, encode_command(4, master, NIL_ENTITY, PUT_UNIQUE_RESULT, inserted=True,
                                  who=writer, req_id=pu["req_id"], publisher=master))
        results = t.wait_results(t.sent)
        check(results[-1].get("value") == typed("boolean", True), "put_unique answered true: %r"
              % results[-1])
        b.send(ct, encode_command(0, master, NIL_ENTITY, KEEPALIVE, seq=4))
        # 7. A lost update the master cannot resend: the clone starts over with a new reader.
        b.send(ct, encode_command(0, master, NIL_ENTITY, KEEPALIVE, seq=5))
        b.expect(lambda c: c["kind"] == "nack" and c["seqs"] == [5], "the nack of update 5")
        b.send(ct, encode_command(0, master, reader, RETRANSMIT_FAILED, seq=5), unicast=True)
        frame, again = b.expect(lambda c: c["kind"] == "nack" and c["seqs"] == [0]
                                and c["sender"] != reader, "the re-attach")
        check(again["sender"] == (b.node, reader[1] + 1), "a new reader entity: %r" % again)
        state = [(encode_string("a"), encode_string("omega"))]
        b.send(ct, encode_command(5, master, again["sender"], ACK_CLONE, offset=5,
                                  heartbeat_interval=5, state=state), unicast=True)
        t.ok('wait-get a "omega" 10s')
        t.ok("wait-size 1 10s")
        wait_stderr(t, "dropped a malformed command")
        check(t.close() == 0, "the tool exits cleanly")


if __name__ == "__main__":
    run_tests([test_broker_clone_attaches_to_our_master,
               test_our_clone_attaches_to_broker_master], limit=40,
              binaries=("broker-node", "broker-store"))
