#!/usr/bin/env python3
"""ws.access_hostile: access rules under attack (doc/security.md, "Identities", "Rules").

- Guessing tokens: an address that failed 10 times gets 429 with Retry-After, unchecked,
  even for the right token, until it earned another attempt (one per 6 s); every attempt
  is counted (failures and throttled attempts apart), the log holds at most 10 lines a
  minute about them, and other addresses and anonymous clients are not affected.
- A flood of refused publications does not slow allowed traffic: a client publishes
  messages it may not publish, at a fixed high rate, from its own process, while an allowed
  client sends bursts to a subscriber. The allowed bursts' rate is measured ROUNDS times
  without the flood and with it, alternating (the flooder is paused with SIGSTOP in
  between); the median with the flood must keep at least MIN_RATE_SHARE of the median
  without. The flood is counted message by message, and its sender hears of it once.

Usage: access_hostile.py <path to broker-node>
"""

import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.checks import check, check_eq, run_tests  # noqa: E402
from brokertest.net import scrape_metrics, wait_metric  # noqa: E402
from brokertest.nodes import Node  # noqa: E402
from brokertest.procs import Cleanup  # noqa: E402
from brokertest.rawws import (PING, PONG, TEXT, RawClient, encode_frame,  # noqa: E402
                              http_exchange, parse_http_response, upgrade_request)

PUB_TOKEN = "publisher-0b4d"
SUB_TOKEN = "subscriber-93ac"
# No pings; room for a whole burst in the subscriber's queue (a Python reader is slow).
OPTIONS = ["--broker.web-socket.ping-interval=0", "--broker.web-socket-buffer-size=65536"]
BURST = 50000          # Messages of one allowed burst.
ROUNDS = 5             # Bursts with and without the flood, alternating; medians compared.
FLOOD_RATE = 100_000   # Refused messages a second the flooder aims at.
MIN_RATE_SHARE = 0.7   # With the flood, the allowed burst keeps at least this share.
BURST_TIMEOUT = 30.0


def token_hash(token):
    return "sha256:" + hashlib.sha256(token.encode()).hexdigest()


RULES = """identity.publisher { tokens = ["%s"], publish = ["/data/"] }
identity.subscriber { tokens = ["%s"], subscribe = ["/data/"] }
# The anonymous identity may do nothing.
""" % (token_hash(PUB_TOKEN), token_hash(SUB_TOKEN))


def start(cleanup, tmp, binary):
    path = os.path.join(tmp, "rules.conf")
    with open(path, "w") as f:
        f.write(RULES)
    return cleanup.add(Node(binary, ["--broker.security.rules-file=" + path] + OPTIONS,
                            "node", web_socket=True, metrics=True))


def upgrade_status(port, token):
    req, _ = upgrade_request(extra_headers=[("Authorization", "Bearer " + token)])
    code, _, headers, body = parse_http_response(http_exchange(port, req))
    return code, headers, body


def test_guessing_tokens_is_throttled_and_counted(binary):
    """after 10 wrong tokens an address gets 429 (Retry-After) without a check, even with
    the right token, until it earned an attempt back; all counted, at most 10 log lines"""
    with Cleanup() as cleanup, tempfile.TemporaryDirectory() as tmp:
        node = start(cleanup, tmp, binary)
        codes = [upgrade_status(node.ws_port, "guess-%d" % i)[0] for i in range(40)]
        check_eq(codes, [401] * 10 + [429] * 30, "answers to 40 guesses")
        code, headers, body = upgrade_status(node.ws_port, PUB_TOKEN)
        check_eq(code, 429, "the right token from the same address, too")
        retry = int(headers["retry-after"][0])
        check(1 <= retry <= 6, "Retry-After of 1 to 6 s: %d" % retry)
        check(b"too many failed authentications from 127.0.0.1" in body, "the reason: %r" % body)
        # An anonymous client has nothing to guess and is not throttled.
        anon = cleanup.add(RawClient(node.ws_port))
        anon.send_text("[]")
        check('"ack"' in anon.recv_text(), "an anonymous client is still served")
        m = scrape_metrics(node.metrics_port)
        check_eq(m.get('broker_access_authentication_failures_total{mechanism="token"}'), 10,
                 "failures counted")
        check_eq(m.get('broker_access_authentication_throttled_total{mechanism="token"}'), 31,
                 "throttled attempts counted")
        check_eq(m.get('broker_web_socket_rejected_clients_total{reason="authentication"}'), 41,
                 "clients turned away")
        lines = node.matching(lambda l: "authentication failed (token)" in l, stderr=True)
        check_eq(len(lines), 10, "log lines about failures (at most 10 a minute)")
        time.sleep(retry + 0.2)
        ok = cleanup.add(RawClient(node.ws_port,
                                   extra_headers=[("Authorization", "Bearer " + PUB_TOKEN)]))
        ok.send_text("[]")
        check('"ack"' in ok.recv_text(), "the right token is accepted after Retry-After")


class Counter(threading.Thread):
    """Reads a subscriber's data messages and counts them (answers pings)."""

    def __init__(self, client):
        super().__init__(daemon=True)
        self.client = client
        self.count = 0
        self.cond = threading.Condition()
        self.error = None

    def run(self):
        try:
            while True:
                opcode, payload = self.client.recv_message()
                if opcode == PING:
                    self.client.sock.sendall(encode_frame(PONG, payload))
                elif opcode == TEXT and payload.startswith(b'{"type":"data-message"'):
                    with self.cond:
                        self.count += 1
                        self.cond.notify_all()
        except Exception as e:  # The end of the test closes the socket.
            self.error = e

    def wait_for(self, n, timeout):
        deadline = time.monotonic() + timeout
        with self.cond:
            while self.count < n:
                left = deadline - time.monotonic()
                check(left > 0, "the subscriber got %d of %d messages" % (self.count, n))
                self.cond.wait(left)


def burst_rate(publisher, counter, tag):
    """Sends BURST allowed messages as fast as the socket takes them; returns messages a
    second until the subscriber counted the last."""
    frames = b"".join(encode_frame(TEXT, json.dumps({
        "type": "data-message", "topic": "/data/%s" % tag, "@data-type": "count",
        "data": i})) for i in range(BURST))
    start_count = counter.count
    began = time.monotonic()
    publisher.sock.sendall(frames)
    counter.wait_for(start_count + BURST, BURST_TIMEOUT)
    return BURST / (time.monotonic() - began)


# The flooder: its own process, so that it competes for the node's time, not the test's.
# Anonymous, it may publish nothing. It sends pre-built frames at FLOOD_RATE, drains what
# the node answers, and prints how many it sent and the error frames it got when told to
# stop (SIGTERM).
FLOODER = r"""
import json, os, signal, socket, sys, time
sys.path.insert(0, sys.argv[3])
from brokertest.rawws import RawClient, TEXT, encode_frame
port, rate = int(sys.argv[1]), int(sys.argv[2])
c = RawClient(port)
c.send_text("[]")
c.recv_text()
chunk_n = 500
chunk = b"".join(encode_frame(TEXT, json.dumps({"type": "data-message", "topic": "/data/x",
                 "@data-type": "string", "data": "flood %d" % i})) for i in range(chunk_n))
stop = []
signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
print("flooding", flush=True)
sent, errors, inbox = 0, 0, b""
due = time.monotonic()
c.sock.setblocking(False)
while not stop:
    now = time.monotonic()
    if now < due:
        time.sleep(min(due - now, 0.01))
        continue
    due = max(due, now - 0.05) + chunk_n / rate  # After a pause (SIGSTOP): no catching up.
    view = memoryview(chunk)
    while view:  # A chunk always goes out whole: no half frame at the end.
        try:
            view = view[c.sock.send(view):]
        except BlockingIOError:
            time.sleep(0.001)
    sent += chunk_n
    try:
        while True:
            data = c.sock.recv(65536)
            if not data:
                break
            inbox += data
    except BlockingIOError:
        pass
errors = inbox.count(b'"type":"error"')
print("sent %d errors %d" % (sent, errors), flush=True)
"""


def test_refused_flood_does_not_slow_allowed_traffic(binary):
    """allowed traffic keeps its rate while another client floods refused publications; the
    flood is counted per message and told once"""
    lib = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib")
    with Cleanup() as cleanup, tempfile.TemporaryDirectory() as tmp:
        node = start(cleanup, tmp, binary)
        sub = cleanup.add(RawClient(node.ws_port,
                                    extra_headers=[("Authorization", "Bearer " + SUB_TOKEN)]))
        sub.send_text(json.dumps(["/data/"]))
        check('"ack"' in sub.recv_text(), "the subscriber's ack")
        counter = Counter(sub)
        counter.start()
        pub = cleanup.add(RawClient(node.ws_port,
                                    extra_headers=[("Authorization", "Bearer " + PUB_TOKEN)]))
        pub.send_text("[]")
        check('"ack"' in pub.recv_text(), "the publisher's ack")
        burst_rate(pub, counter, "warm-up")
        flooder = subprocess.Popen([sys.executable, "-c", FLOODER, str(node.ws_port),
                                    str(FLOOD_RATE), lib],
                                   stdout=subprocess.PIPE, text=True)
        without, during = [], []
        try:
            check_eq(flooder.stdout.readline().strip(), "flooding", "the flooder starts")
            wait_metric(node.metrics_port, "broker_refused_messages_total",
                        lambda v: v >= FLOOD_RATE / 10, timeout=10, what="the flood arriving")
            for i in range(ROUNDS):
                flooder.send_signal(signal.SIGSTOP)
                time.sleep(0.1)  # What the flooder sent before the pause is routed.
                without.append(burst_rate(pub, counter, "without-%d" % i))
                flooder.send_signal(signal.SIGCONT)
                time.sleep(0.1)  # The flood is under way again.
                during.append(burst_rate(pub, counter, "during-%d" % i))
        finally:
            flooder.send_signal(signal.SIGCONT)
            flooder.send_signal(signal.SIGTERM)
            out, _ = flooder.communicate(timeout=10)
        sent, errors = [int(x) for x in out.split()[1::2]]
        base = sorted(without)[ROUNDS // 2]
        flood = sorted(during)[ROUNDS // 2]
        print("allowed bursts of %d messages: %s msg/s without the flood, %s with it (%d "
              "refused messages in all, %d/s aimed at); medians %.0f and %.0f: %.0f%%"
              % (BURST, [round(x) for x in without], [round(x) for x in during], sent,
                 FLOOD_RATE, base, flood, 100 * flood / base), flush=True)
        check(flood >= MIN_RATE_SHARE * base,
              "with the flood the allowed rate keeps %.0f%% of %.0f msg/s (need %.0f%%)"
              % (100 * flood / base, base, 100 * MIN_RATE_SHARE))
        check_eq(counter.count, (1 + 2 * ROUNDS) * BURST, "every allowed message arrived")
        m = wait_metric(node.metrics_port, "broker_refused_messages_total",
                        lambda v: v == sent, what="every flood message counted")
        check_eq(m.get('broker_access_refusals_total{identity="anonymous",'
                       'rule="default publish",what="publish"}'), sent,
                 "counted under the anonymous identity's default rule")
        check_eq(errors, 1, "the flooder is told once")


if __name__ == "__main__":
    run_tests([test_guessing_tokens_is_throttled_and_counted,
               test_refused_flood_does_not_slow_allowed_traffic], limit=130)
