#!/usr/bin/env python3
"""ws.access_rules: access rules for WebSocket clients, end to end (doc/security.md).

A node with a rules file serves WebSocket clients that identify with a bearer token (the
Authorization header or ?token=), with a client certificate on wss://, or with nothing (the
anonymous identity). Checked with real clients:
- a client with a token publishes only under its prefixes: a refused message is dropped
  and counted per identity and rule, and the client gets one access_denied error frame per
  rule that names the rule's file:line:column, not one per message;
- it subscribes only where allowed: a prefix is narrowed (an error frame after the ack),
  refused, or filtered (deliveries under a denied part are dropped and counted);
- a wrong token gets 401 with the reason, a malformed one 400, an unknown certificate 403;
  each is counted (/metrics) and logged with the remote address;
- SIGHUP changes the rules of connected clients without dropping them, and closes a client
  whose token was removed (1008, with an error frame saying why).

Usage: access_rules.py <path to broker-node>
"""

import hashlib
import json
import os
import signal
import ssl
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.checks import check, check_eq, run_tests  # noqa: E402
from brokertest.net import scrape_metrics, wait_metric  # noqa: E402
from brokertest.nodes import NODE_TLS, Node, cert  # noqa: E402
from brokertest.procs import Cleanup  # noqa: E402
from brokertest.rawws import (CLOSE, PING, PONG, TEXT, RawClient, encode_frame,  # noqa: E402
                              http_exchange, parse_http_response, upgrade_request)

APP_TOKEN = "app-token-7f3a"
FEEDER_TOKEN = "feeder-token-c21e"
WAIT = 10.0
NO_PINGS = ["--broker.web-socket.ping-interval=0"]


def token_hash(token):
    return "sha256:" + hashlib.sha256(token.encode()).hexdigest()


RULES = """# WebSocket clients of ws.access_rules
identity.app {
  tokens = ["%s"]
  publish = ["/app/"]
  deny-publish = ["/app/control/"]
  subscribe = ["/app/", "/public/"]
  deny-subscribe = ["/app/secret/"]
}
identity.feeder {
  tokens = ["%s"]
  publish = [""]
}
identity.anonymous.subscribe = ["/public/"]
""" % (token_hash(APP_TOKEN), token_hash(FEEDER_TOKEN))

# After the reload: the app may read and publish everything; the feeder's token is gone.
RELOADED = """identity.app {
  tokens = ["%s"]
  publish = [""]
  subscribe = [""]
}
identity.anonymous.subscribe = ["/public/"]
""" % token_hash(APP_TOKEN)


def position(text, needle):
    """line:column (1-based) of the first `needle` in `text`."""
    before = text[:text.index(needle)]
    return "%d:%d" % (before.count("\n") + 1, len(before) - before.rfind("\n"))


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def publish(client, topic, value):
    client.send_text(json.dumps({"type": "data-message", "topic": topic,
                                 "@data-type": "string", "data": value}))


def bearer(token):
    return [("Authorization", "Bearer " + token)]


def connect(port, topics, token=None, path=None, **kwargs):
    """A client that sent its subscriptions and got the ack; returns (client, ack)."""
    headers = bearer(token) if token else ()
    client = RawClient(port, path=path or "/v1/messages/json", extra_headers=headers, **kwargs)
    client.send_text(json.dumps(topics))
    ack = json.loads(client.recv_text())
    check_eq(ack["type"], "ack", "the answer to the subscriptions")
    return client


def messages(client, until, timeout=WAIT):
    """Text messages (decoded) until one satisfies `until` (included); pings answered."""
    out = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        client.sock.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            opcode, payload = client.recv_message()
        finally:
            client.sock.settimeout(client.timeout)
        if opcode == PING:
            client.sock.sendall(encode_frame(PONG, payload))
            continue
        if opcode == CLOSE:
            out.append({"type": "close", "code": int.from_bytes(payload[:2], "big"),
                        "reason": payload[2:].decode()})
            return out
        if opcode != TEXT:
            continue
        msg = json.loads(payload)
        out.append(msg)
        if until(msg):
            return out
    check(False, "timed out; got %r" % out)


def is_data(topic):
    return lambda m: m.get("type") == "data-message" and m.get("topic") == topic


def errors(msgs):
    return [m for m in msgs if m.get("type") == "error"]


def data_topics(msgs):
    """The topics of data messages, without the node's own events (a client subscribed to
    "" gets its status events too)."""
    return [m["topic"] for m in msgs
            if m.get("type") == "data-message" and not m["topic"].startswith("<$>")]


def metric(m, name, **labels):
    """The value of `name` with exactly these labels (escaped as Prometheus does), or 0."""
    def esc(v):
        return v.replace("\\", "\\\\").replace('"', '\\"')
    key = name + "{" + ",".join('%s="%s"' % (k, esc(v)) for k, v in sorted(labels.items())) + "}"
    return m.get(key, 0)


def start(cleanup, tmp, name="node", rules=RULES, **kwargs):
    path = os.path.join(tmp, "rules.conf")
    write(path, rules)
    node = cleanup.add(Node(kwargs.pop("binary"), ["-t", "/app/,/public/,/other/", "-v",
                                                   "--broker.security.rules-file=" + path]
                            + NO_PINGS, name, web_socket=True, metrics=True, **kwargs))
    return node, path


def test_token_client_publishes_only_under_its_prefixes(binary):
    """a token's identity publishes under its prefixes only; each refusing rule is told once
    (error frame naming file:line:column) and every refused message is counted"""
    with Cleanup() as cleanup, tempfile.TemporaryDirectory() as tmp:
        node, path = start(cleanup, tmp, binary=binary)
        app = cleanup.add(connect(node.ws_port, [], token=APP_TOKEN))
        for i in range(5):
            publish(app, "/app/control/stop", "stop %d" % i)
            publish(app, "/app/news", "n%d" % i)
            publish(app, "/other/x", "o%d" % i)
        publish(app, "/app/end", "end")
        node.wait_for(lambda l: l == "received /app/end end", what="the allowed messages")
        received = [l for l in node.lines if l.startswith("received ")]
        check_eq(received, ["received /app/news n%d" % i for i in range(5)]
                 + ["received /app/end end"], "what the node received from the client")
        errs = errors(messages(app, lambda m: len(errors([m])) > 0 and "/other/x" in m["context"]))
        check_eq(len(errs), 2, "one error frame per refusing rule: %r" % errs)
        check_eq(errs[0]["code"], "access_denied", "the code")
        check('publishing on "/app/control/stop" refused: deny publish "/app/control/" for '
              'identity "app" (%s:%s)' % (path, position(RULES, "deny-publish"))
              in errs[0]["context"], "the deny rule with its position: %r" % errs[0])
        check('no publish rule of identity "app" matches: denied by default' in errs[1]["context"],
              "the default rule: %r" % errs[1])
        m = wait_metric(node.metrics_port, "broker_refused_messages_total", lambda v: v == 10,
                        what="10 refused messages")
        check_eq(metric(m, "broker_access_refusals_total", identity="app",
                        rule='deny publish "/app/control/"', what="publish"), 5,
                 "refusals counted by the deny rule")
        check_eq(metric(m, "broker_access_refusals_total", identity="app",
                        rule="default publish", what="publish"), 5,
                 "refusals counted by the default rule")
        # Nothing more is told about these rules: the next frame is the answer to a ping.
        publish(app, "/app/control/stop", "again")
        app.send_frame(PING, b"probe")
        while True:
            opcode, payload = app.recv_message()
            check(opcode != TEXT, "no further error frame: %r" % payload)
            if opcode == PONG:
                break
        check_eq(len(node.matching(lambda l: "security: client" in l and "refused" in l,
                                   stderr=True)), 2, "two log lines about refusals")


def test_subscriptions_are_narrowed_refused_and_filtered(binary):
    """a token's identity and the anonymous one receive only what their subscribe rules
    allow: narrowed and refused prefixes get error frames after the ack, deliveries under a
    denied part are dropped and counted"""
    with Cleanup() as cleanup, tempfile.TemporaryDirectory() as tmp:
        node, path = start(cleanup, tmp, binary=binary)
        app = cleanup.add(RawClient(node.ws_port, path="/v1/messages/json?token="
                                    + APP_TOKEN.replace("-", "%2D")))
        app.send_text(json.dumps(["", "/app/", "/private/"]))
        first = messages(app, lambda m: m.get("type") == "error" and "/private/" in m["context"])
        check_eq(first[0]["type"], "ack", "the ack comes first")
        errs = errors(first)
        check_eq(len(errs), 2, "narrowed and refused: %r" % errs)
        check('subscription "" narrowed to "/app/", "/public/"' in errs[0]["context"],
              "the narrowing: %r" % errs[0])
        check('subscription "/private/" refused: no subscribe rule of identity "app" matches'
              in errs[1]["context"], "the refusal: %r" % errs[1])
        anon = cleanup.add(connect(node.ws_port, ["/"]))
        narrowed = messages(anon, lambda m: m.get("type") == "error")
        check('subscription "/" narrowed to "/public/"' in narrowed[-1]["context"]
              and 'identity "anonymous"' in narrowed[-1]["context"], "anonymous: %r" % narrowed)
        feeder = cleanup.add(connect(node.ws_port, [], token=FEEDER_TOKEN))
        for topic in ["/app/a", "/app/secret/s", "/private/p", "/other/o", "/public/p",
                      "/app/end"]:
            publish(feeder, topic, "x")
        publish(feeder, "/public/end", "x")
        check_eq(data_topics(messages(app, is_data("/public/end"))),
                 ["/app/a", "/public/p", "/app/end", "/public/end"], "what the app client got")
        check_eq(data_topics(messages(anon, is_data("/public/end"))),
                 ["/public/p", "/public/end"], "what the anonymous client got")
        m = scrape_metrics(node.metrics_port)
        check_eq(metric(m, "broker_access_refusals_total", identity="app",
                        rule='deny subscribe "/app/secret/"', what="deliver"), 1,
                 "the filtered delivery is counted")
        check_eq(metric(m, "broker_access_refusals_total", identity="app",
                        rule="default subscribe", what="subscribe"), 2,
                 "the narrowed and the refused prefix are counted")


def test_wrong_tokens_and_certificates_are_refused_with_a_reason(binary):
    """a wrong token gets 401 (header or ?token=), a malformed Authorization 400, an
    unknown certificate on wss:// 403; each is counted and logged with the address"""
    with Cleanup() as cleanup, tempfile.TemporaryDirectory() as tmp:
        node, path = start(cleanup, tmp, binary=binary)
        req, _ = upgrade_request(extra_headers=bearer("not-the-token"))
        code, _, headers, body = parse_http_response(http_exchange(node.ws_port, req))
        check_eq(code, 401, "a wrong token in the header")
        check_eq(body, b"authentication failed: the token belongs to no identity\n", "the reason")
        check_eq(headers.get("www-authenticate"), ['Bearer error="invalid_token"'],
                 "the challenge")
        req, _ = upgrade_request(path="/v1/messages/json?token=also-wrong")
        code, _, _, _ = parse_http_response(http_exchange(node.ws_port, req))
        check_eq(code, 401, "a wrong ?token=")
        req, _ = upgrade_request(extra_headers=[("Authorization", "Basic dXNlcjpwdw==")])
        code, _, _, body = parse_http_response(http_exchange(node.ws_port, req))
        check_eq(code, 400, "another scheme than Bearer")
        check(b"not-the-token" not in body and b"dXNlcjpwdw" not in body, "no credential echoed")
        m = wait_metric(node.metrics_port,
                        'broker_access_authentication_failures_total{mechanism="token"}',
                        lambda v: v == 2, what="two failed tokens")
        check_eq(m.get('broker_web_socket_rejected_clients_total{reason="authentication"}'), 3,
                 "three clients turned away for their credentials")
        # The counter can be scraped before the log lines are read from the node's stderr.
        is_failure = lambda l: "authentication failed (token) from 127.0.0.1:" in l  # noqa: E731
        node.wait_count(is_failure, 2, what="the failures logged", stderr=True)
        time.sleep(0.2)  # A third line (there must be none) would have arrived by now.
        check_eq(len(node.matching(is_failure, stderr=True)), 2,
                 "each failure logged with the address")
        check(not any("not-the-token" in l or "also-wrong" in l for l in node.err_lines),
              "no token in the log")
        # A token that is right still works, in the header or the query.
        cleanup.add(connect(node.ws_port, ["/app/"], token=APP_TOKEN))
        cleanup.add(connect(node.ws_port, ["/app/"], path="/v1/messages/json?token=" + APP_TOKEN))

    # wss://: the client's certificate is its identity, unless it sends a token.
    tls_rules = ('identity.tester { certificates = ["cn:broker test client"], '
                 'subscribe = ["/tls/"] }\n')
    with Cleanup() as cleanup, tempfile.TemporaryDirectory() as tmp:
        node, path = start(cleanup, tmp, binary=binary, rules=tls_rules, tls=NODE_TLS)
        ctx = ssl.create_default_context(cafile=cert("ca.pem"))
        ctx.load_cert_chain(cert("client.pem"), cert("client.key"))
        client = cleanup.add(connect(node.ws_port, ["/tls/", "/x/"], ssl_context=ctx))
        errs = errors(messages(client, lambda m: m.get("type") == "error"))
        check('subscription "/x/" refused: no subscribe rule of identity "tester"'
              in errs[0]["context"], "the certificate's identity decides: %r" % errs)
        write(path, 'identity.other.certificates = ["cn:someone else"]\n')
        node.send_signal(signal.SIGHUP)
        node.wait_count(lambda l: "security: rules from" in l, 2, what="the reload",
                        stderr=True)
        ctx = ssl.create_default_context(cafile=cert("ca.pem"))
        ctx.load_cert_chain(cert("client.pem"), cert("client.key"))
        req, _ = upgrade_request()
        code, _, _, body = parse_http_response(http_exchange(node.ws_port, req, ssl_context=ctx))
        check_eq(code, 403, "an unknown certificate")
        check_eq(body, b"authentication failed: the certificate (cn:broker test client) belongs "
                 b"to no identity\n", "the reason")
        node.wait_for(lambda l: "authentication failed (certificate) from 127.0.0.1:" in l,
                      what="the log line", stderr=True)


def test_reload_changes_rules_of_connected_clients(binary):
    """SIGHUP changes what connected clients may publish and receive without dropping them,
    and closes a client whose token was removed with 1008 and an error frame"""
    with Cleanup() as cleanup, tempfile.TemporaryDirectory() as tmp:
        node, path = start(cleanup, tmp, binary=binary)
        app = cleanup.add(connect(node.ws_port, [""], token=APP_TOKEN))
        messages(app, lambda m: m.get("type") == "error")  # "" narrowed.
        feeder = cleanup.add(connect(node.ws_port, [], token=FEEDER_TOKEN))
        publish(feeder, "/other/before", "x")
        publish(feeder, "/app/before", "x")
        check_eq(data_topics(messages(app, is_data("/app/before"))), ["/app/before"],
                 "before the reload /other/ is not delivered")
        publish(app, "/public/before", "x")
        check("refused" in messages(app, lambda m: m.get("type") == "error")[-1]["context"],
              "before the reload the app may not publish on /public/")
        write(path, RELOADED)
        node.send_signal(signal.SIGHUP)
        node.wait_for(lambda l: "rules from %s: 2 identities" % path in l,
                      what="the reloaded rules", stderr=True)
        # The feeder's token is gone: it is told and closed.
        got = messages(feeder, lambda m: m.get("type") == "close")
        check("no identity any more after a reload" in got[0].get("context", ""),
              "the feeder is told why: %r" % got)
        check_eq(got[-1]["code"], 1008, "and closed with 1008")
        # The app stays and may now publish on /public/; a second client sees /other/ from it.
        watcher = cleanup.add(connect(node.ws_port, ["/other/", "/public/"], token=APP_TOKEN))
        publish(app, "/public/after", "x")
        node.wait_for(lambda l: l == "received /public/after x", what="the newly allowed publication")
        check_eq(data_topics(messages(watcher, is_data("/public/after"))), ["/public/after"],
                 "delivered")
        # Its own subscription "" is granted as a whole now: it receives /other/ too.
        publish(watcher, "/other/after", "x")
        check_eq(data_topics(messages(app, is_data("/other/after"))),
                 ["/other/after"], "the app client, still connected, gets more")
        check(not node.matching(lambda l: "removed" in l and "app" in l, stderr=True),
              "the app client was not dropped")


def test_a_refused_delivery_alone_does_not_stall_the_next(binary):
    """a write batch whose messages were all refused (filtered subscription) leaves the
    client's queue idle: the next allowed message arrives without waiting for another"""
    with Cleanup() as cleanup, tempfile.TemporaryDirectory() as tmp:
        node, path = start(cleanup, tmp, binary=binary)
        app = cleanup.add(connect(node.ws_port, ["/app/"], token=APP_TOKEN))
        feeder = cleanup.add(connect(node.ws_port, [], token=FEEDER_TOKEN))
        for i in range(5):
            publish(feeder, "/app/secret/s", "x")
            time.sleep(0.2)  # Alone in the app's next write batch: refused, nothing written.
            publish(feeder, "/app/after", "x%d" % i)
            got = messages(app, is_data("/app/after"), timeout=5.0)
            check_eq(data_topics(got), ["/app/after"], "round %d: the allowed message" % i)
            time.sleep(0.2)


def test_the_anonymous_identity_has_a_configurable_name(binary):
    """anonymous-identity names the identity of clients without credentials: its rules
    apply, refusals and the metrics name it; without rules for it, it may do nothing"""
    rules = ('anonymous-identity = "guest"\n'
             'identity.guest.subscribe = ["/public/"]\n'
             'identity.guest.publish = ["/public/guest/"]\n'
             'identity.feeder { tokens = ["%s"], publish = [""] }\n' % token_hash(FEEDER_TOKEN))
    with Cleanup() as cleanup, tempfile.TemporaryDirectory() as tmp:
        node, path = start(cleanup, tmp, binary=binary, rules=rules)
        guest = cleanup.add(connect(node.ws_port, ["/public/", "/app/"]))
        errs = errors(messages(guest, lambda m: m.get("type") == "error"))
        check('subscription "/app/" refused: no subscribe rule of identity "guest" matches'
              in errs[-1]["context"], "the guest's refusal names it: %r" % errs)
        observer = cleanup.add(connect(node.ws_port, ["/public/"]))  # Also a guest.
        publish(guest, "/public/guest/hello", "x")
        publish(guest, "/public/other", "x")
        feeder = cleanup.add(connect(node.ws_port, [], token=FEEDER_TOKEN))
        publish(feeder, "/public/end", "x")
        check_eq(data_topics(messages(observer, is_data("/public/end"))),
                 ["/public/guest/hello", "/public/end"], "what the guests published and got")
        check_eq(data_topics(messages(guest, is_data("/public/end"))),
                 ["/public/end"], "a client does not hear itself")
        m = wait_metric(node.metrics_port, 'broker_access_refusals_total{identity="guest",'
                        'rule="default publish",what="publish"}', lambda v: v == 1,
                        what="the guest's refused publication")
        check_eq(m.get("broker_access_identities"), 2,
                 "feeder and guest: the anonymous identity is guest, not a third")
    # Renamed, and no rules for it: clients without credentials may do nothing.
    with Cleanup() as cleanup, tempfile.TemporaryDirectory() as tmp:
        node, path = start(cleanup, tmp, binary=binary, rules='anonymous-identity = "nobody"\n'
                           'identity.feeder { tokens = ["%s"], publish = [""] }\n'
                           % token_hash(FEEDER_TOKEN))
        anon = cleanup.add(connect(node.ws_port, ["/public/"]))
        errs = errors(messages(anon, lambda m: m.get("type") == "error"))
        check('subscription "/public/" refused: no subscribe rule of identity "nobody"'
              in errs[-1]["context"], "refused as nobody: %r" % errs)


if __name__ == "__main__":
    run_tests([test_token_client_publishes_only_under_its_prefixes,
               test_subscriptions_are_narrowed_refused_and_filtered,
               test_wrong_tokens_and_certificates_are_refused_with_a_reason,
               test_reload_changes_rules_of_connected_clients,
               test_the_anonymous_identity_has_a_configurable_name,
               test_a_refused_delivery_alone_does_not_stall_the_next],
              limit=90)
