"""ws.zeek_client: clients shaped like Zeek's own client library (zeek-websocket-rs, with its
Python and C bindings) work unchanged.

Such a client sends an X-Application-Name header and every message, the subscriptions
included, as a binary frame, and answers pings. Zeek's server accepts that and answers in
text frames; so must ours:
- two such clients exchange Zeek events through the node, both ways, and every answer
  (ack, data, error frames) is a text frame;
- /v1/status names each client's application, and the per-client metrics carry an `app`
  label;
- an invalid X-Application-Name still gets the 101, then Zeek's error frame
  (invalid_application_name, naming the header) and close 1008; it is counted;
- a client that answers pings stays; one that stops answering is closed with 1001 within
  about two ping intervals and counted in broker_web_socket_ping_timeouts_total;
- bad input in a binary frame gets an error frame naming the problem, and is counted and
  logged (naming the client's application).
"""

import json
import os
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.checks import check, check_eq, run_tests  # noqa: E402
from brokertest.net import addr, scrape_metrics, wait_metric  # noqa: E402
from brokertest.nodes import Node  # noqa: E402
from brokertest.rawws import (BINARY, CLOSE, PING, PONG, TEXT, RawClient,  # noqa: E402
                              close_code)

PING_MS = 300


def zeek_event(topic, name, *args):
    """A Zeek event as zeek-websocket-rs encodes it (Broker's JSON v1 data message)."""
    return json.dumps({
        "type": "data-message", "topic": topic, "@data-type": "vector",
        "data": [{"@data-type": "count", "data": 1}, {"@data-type": "count", "data": 1},
                 {"@data-type": "vector", "data": [
                     {"@data-type": "string", "data": name},
                     {"@data-type": "vector", "data": list(args)}]}]}).encode()


class ZeekShapedClient(RawClient):
    """Binary frames, the header, and pongs for the server's pings."""

    def __init__(self, port, app, topics):
        super().__init__(port, extra_headers=[("X-Application-Name", app)])
        self.pings = 0
        self.send_frame(BINARY, json.dumps(topics).encode())
        ack = json.loads(self.recv_answer())
        check_eq(ack["type"], "ack", "first answer")

    def publish(self, payload):
        self.send_frame(BINARY, payload)

    def recv_answer(self):
        """The next data, ack or error message (a text frame); answers pings meanwhile."""
        while True:
            opcode, payload = self.recv_message()
            if opcode == PING:
                self.pings += 1
                self.send_frame(PONG, payload)
                continue
            check_eq(opcode, TEXT, "opcode of the server's answer (Zeek answers in text)")
            return payload.decode()

    def stay(self, seconds):
        """Reads for `seconds`, answering pings; fails on anything else."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for _, opcode, payload in self.poll_frames(0.05):
                check_eq(opcode, PING, "what an idle client gets")
                self.pings += 1
                self.send_frame(PONG, payload)


def status(node):
    url = "http://%s/v1/status" % addr(node.metrics_port)
    with urllib.request.urlopen(url, timeout=5) as res:
        return json.loads(res.read())


def test_events_both_ways(node_bin):
    """two zeek-websocket-rs-shaped clients exchange events; status and metrics name them"""
    with Node(node_bin, web_socket=True, metrics=True) as node:
        a = ZeekShapedClient(node.ws_port, "zeek-rs/a", ["/zeek/a"])
        b = ZeekShapedClient(node.ws_port, "ops:b@host", ["/zeek/b"])
        ping = zeek_event("/zeek/a", "ping", {"@data-type": "string", "data": "hi"},
                          {"@data-type": "count", "data": 7})
        b.publish(ping)
        got = json.loads(a.recv_answer())
        check_eq(got, json.loads(ping), "the event at client a")
        pong = zeek_event("/zeek/b", "pong", {"@data-type": "integer", "data": -1})
        a.publish(pong)
        check_eq(json.loads(b.recv_answer()), json.loads(pong), "the event at client b")
        # Bad input in a binary frame: an error frame that names the problem.
        b.publish(b'{"topic":"/zeek/a","@data-type":"count","data":"seven"}')
        err = json.loads(b.recv_answer())
        check_eq(err["code"], "deserialization_failed", "error code")
        check("input #2 contained invalid data" in err["context"]
              and "count" in err["context"] and "string" in err["context"],
              "the context names the type and what came: %r" % err["context"])
        apps = sorted(c.get("app") for c in status(node)["clients"]["items"])
        check_eq(apps, ["ops:b@host", "zeek-rs/a"], "applications in /v1/status")
        m = scrape_metrics(node.metrics_port)
        labelled = [k for k in m if k.startswith("broker_web_socket_client_queued_messages{")]
        check(any('app="zeek-rs/a"' in k for k in labelled)
              and any('app="ops:b@host"' in k for k in labelled),
              "app labels on the per-client metrics: %r" % labelled)
        check_eq(m.get("broker_web_socket_rejected_inputs_total"), 1.0, "rejected inputs")
        node.wait_for(lambda l: "sent invalid input: input #2 contained invalid data" in l
                      and "app ops:b@host" in l, stderr=True,
                      what="the log line for the rejected input")
        a.close()
        b.close()


def test_invalid_application_name(node_bin):
    """an invalid X-Application-Name gets the 101, Zeek's error frame and close 1008"""
    with Node(node_bin, web_socket=True, metrics=True) as node:
        for name, why in (("my app", "' '"), ("zeek\u00e9", "byte 0x")):
            c = RawClient(node.ws_port, extra_headers=[("X-Application-Name", name)])
            opcode, payload = c.recv_message()
            check_eq(opcode, TEXT, "the error frame's opcode")
            err = json.loads(payload)
            check_eq(err["code"], "invalid_application_name", "error code (as Zeek's)")
            check("X-Application-Name" in err["context"] and why in err["context"],
                  "the context names the header and the character: %r" % err["context"])
            opcode, payload = c.recv_message()
            check_eq((opcode, close_code(payload)[0]), (CLOSE, 1008), "close frame")
            c.close()
        key = 'broker_web_socket_rejected_clients_total{reason="application_name"}'
        wait_metric(node.metrics_port, key, lambda v: v == 2, what="two rejected clients")
        # A valid name with every allowed kind of character is accepted.
        ZeekShapedClient(node.ws_port, "a-Z/0_9.=:*@", ["/t"]).close()


def test_pings(node_bin):
    """a client that answers pings stays; one that stops is closed with 1001 and counted"""
    args = ["--broker.web-socket.ping-interval=%d" % PING_MS]
    with Node(node_bin, args, web_socket=True, metrics=True) as node:
        alive = ZeekShapedClient(node.ws_port, "alive", ["/t"])
        silent = ZeekShapedClient(node.ws_port, "silent", ["/t"])
        # The silent client reads but never answers: a ping, then the close. The live one
        # answers every ping meanwhile.
        start = time.monotonic()
        seen = []
        while time.monotonic() - start < 5 * PING_MS / 1000:
            alive.stay(0.02)
            if not seen or seen[-1][0] != CLOSE:
                seen += [(op, p) for _, op, p in silent.poll_frames(0.02)]
                if seen and seen[-1][0] == CLOSE:
                    took = time.monotonic() - start
        check_eq([op for op, _ in seen], [PING, CLOSE], "frames to the silent client")
        code, reason = close_code(seen[-1][1])
        check_eq(code, 1001, "close code for a silent client")
        check("ping" in reason, "close reason: %r" % reason)
        check(took < 3 * PING_MS / 1000 + 0.5, "closed after %.1f s" % took)
        check(alive.pings >= 3, "pings to the live client: %d" % alive.pings)
        # Still attached: it gets data.
        other = ZeekShapedClient(node.ws_port, "other", ["/other"])
        other.publish(zeek_event("/t", "still-here"))
        check_eq(json.loads(alive.recv_answer())["topic"], "/t", "data after the pings")
        m = wait_metric(node.metrics_port, "broker_web_socket_ping_timeouts_total",
                        lambda v: v == 1, what="one ping timeout")
        check_eq(m.get('broker_connections{type="web-socket"}'), 2.0, "clients left")
        for c in (alive, silent, other):
            c.close()


run_tests([test_events_both_ways, test_invalid_application_name, test_pings], limit=80)
