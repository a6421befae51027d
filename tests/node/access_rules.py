#!/usr/bin/env python3
"""node.access_rules: access rules for peers identified by their TLS certificates, end to
end (doc/security.md).

A hub with a rules file and mutually authenticated TLS (the test PKI); a spoke peers with
it presenting the certificate of worker-1 (the rules name its SAN
"dns:worker-1.zeek.example"; the spoke also serves with it, so it needs a certificate
without a client-only key usage); an edge behind the spoke, whose
WebSocket client publishes, so that what reaches the hub is relayed by the spoke. Checked:
- the spoke's messages (its own and those it relays) are checked against its identity:
  allowed topics arrive, the others are dropped, counted per identity and rule, and the
  hub emits one access_denied error event per rule (not per message);
- the spoke's subscriptions are narrowed (an error event naming the rule) and filtered:
  it receives only what its rules allow;
- /v1/status shows the refusals per identity and rule; neither it, /metrics nor the web
  view show a token or its hash;
- a certificate the rules do not know is refused after TLS: the spoke's node reports
  "access denied" with the reason (the hub's drop_conn), the hub logs and counts it;
- SIGHUP widens the spoke's rights without dropping the peering, and removing its
  certificate from the rules unpeers it.

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
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

import brokertest.peer as bp  # noqa: E402
from brokertest.checks import check, check_eq, run_tests  # noqa: E402
from brokertest.net import wait_metric  # noqa: E402
from brokertest.nodes import NODE_TLS, Node, cert, is_status, peer_uri  # noqa: E402
from brokertest.procs import Cleanup  # noqa: E402
from brokertest.rawws import RawClient  # noqa: E402

FEEDER_TOKEN = "hub-feeder-5e1f"
WAIT = 10.0
LOCAL = ["--listen-address=127.0.0.1", "--broker.web-socket.ping-interval=0", "-v"]
SPOKE_TLS = {"certificate": cert("worker-1.pem"), "key": cert("worker-1.key"),
             "cafile": cert("ca.pem")}
EDGE_TLS = NODE_TLS  # It serves wss:// to the test's client: a certificate for 127.0.0.1.
SPOKE_CERT = "dns:worker-1.zeek.example"

FEEDER = """identity.feeder {
  tokens = ["sha256:%s"]
  publish = [""]
}
""" % hashlib.sha256(FEEDER_TOKEN.encode()).hexdigest()

RULES = FEEDER + """identity.spoke {
  certificates = ["%s"]
  publish = ["/zeek/logs/"]
  subscribe = ["/zeek/"]
  deny-subscribe = ["/zeek/secret/"]
}
""" % SPOKE_CERT

WIDER = FEEDER + """identity.spoke {
  certificates = ["%s"]
  publish = ["/zeek/"]
  subscribe = [""]
}
""" % SPOKE_CERT

UNKNOWN = FEEDER + 'identity.other.certificates = ["cn:someone else"]\n'


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def http_get(port, path):
    with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=WAIT) as res:
        return res.read().decode()


def publish(client, topic, value):
    client.send_text(json.dumps({"type": "data-message", "topic": topic,
                                 "@data-type": "string", "data": value}))


def received(topic, value):
    return lambda l: l == "received %s %s" % (topic, value)


def is_access_error(l):
    return l.startswith("error access_denied ")


def ws_client(node, topics=(), token=None):
    """A wss:// client of `node` (every node here serves TLS) with the test PKI's client
    certificate, which no identity names: at the hub, a token decides."""
    headers = [("Authorization", "Bearer " + token)] if token else ()
    ctx = ssl.create_default_context(cafile=cert("ca.pem"))
    ctx.load_cert_chain(cert("client.pem"), cert("client.key"))
    c = RawClient(node.ws_port, extra_headers=headers, ssl_context=ctx)
    c.send_text(json.dumps(list(topics)))
    check('"ack"' in c.recv_text(), "the client's ack")
    return c


def hub_and_spoke(cleanup, binary, tmp, rules=RULES, spoke_topics="/zeek/"):
    path = os.path.join(tmp, "rules.conf")
    write(path, rules)
    hub = cleanup.add(Node(binary, LOCAL + ["-t", "/zeek/,/other/",
                                            "--broker.security.rules-file=" + path],
                           "hub", tls=NODE_TLS, web_socket=True, metrics=True))
    spoke = cleanup.add(Node(binary, LOCAL + ["-t", spoke_topics, "--peers",
                                              peer_uri(hub.port)], "spoke", tls=SPOKE_TLS))
    return hub, spoke, path


def until_received(node, client, topic, timeout=WAIT):
    """Publishes `topic` "probe" from `client` until `node` received one (subscriptions take
    a moment to travel)."""
    deadline = time.monotonic() + timeout
    while not node.matching(received(topic, "probe")):
        check(time.monotonic() < deadline, "%s received %s" % (node.name, topic))
        publish(client, topic, "probe")
        time.sleep(0.1)


def test_relayed_messages_are_checked_against_the_peer(binary):
    """what the spoke relays is checked against the spoke's certificate identity: allowed
    topics arrive, refused ones are counted per rule and reported once"""
    with Cleanup() as cleanup, tempfile.TemporaryDirectory() as tmp:
        hub, spoke, path = hub_and_spoke(cleanup, binary, tmp)
        hub.wait_for(is_status("peer_added"), what="the spoke's peering")
        edge = cleanup.add(Node(binary, LOCAL + ["--peers", peer_uri(spoke.port)], "edge",
                                tls=EDGE_TLS, web_socket=True))
        edge.wait_for(is_status("peer_added"), what="the edge's peering")
        client = cleanup.add(ws_client(edge))
        until_received(hub, client, "/zeek/logs/ready")
        for i in range(5):
            publish(client, "/zeek/control/stop", "stop")
            publish(client, "/zeek/logs/conn", "c%d" % i)
            publish(client, "/other/x", "o%d" % i)
        publish(client, "/zeek/logs/end", "end")
        hub.wait_for(received("/zeek/logs/end", "end"), what="the last message")
        got = [l for l in hub.lines if l.startswith("received ") and "probe" not in l]
        check_eq(got, ["received /zeek/logs/conn c%d" % i for i in range(5)]
                 + ["received /zeek/logs/end end"], "what the hub received")
        check(hub.alive() and spoke.alive() and edge.alive(), "every node runs")
        # The error event comes from the core, the messages straight from the reading
        # thread (run to completion): the event may be printed after "end".
        hub.wait_for(is_access_error, what="the access error event")
        errs = hub.matching(is_access_error)
        check_eq(len(errs), 1, "one error event for the rule that refused 10 messages: %r"
                 % errs)
        check('identity "spoke"): publishing on "/zeek/control/stop" refused: no publish rule '
              'of identity "spoke" matches: denied by default (identity defined at %s:6:3)'
              % path in errs[0], "the event names the peer, identity and rule: %s" % errs[0])
        wait_metric(hub.metrics_port, 'broker_access_refusals_total{identity="spoke",'
                    'rule="default publish",what="publish"}', lambda v: v == 10,
                    what="10 refusals of the spoke")
        status = http_get(hub.metrics_port, "/v1/status")
        access = json.loads(status)["access"]
        check(access["enforcing"] and access["identities"] == 3, "status: %r" % access)
        check({"identity": "spoke", "rule": "default publish", "publishes": 10,
               "subscriptions": 0, "deliveries": 0} in access["refusals"],
              "/v1/status shows the refusals per identity and rule: %r" % access["refusals"])
        token_hash = hashlib.sha256(FEEDER_TOKEN.encode()).hexdigest()
        for path in ["/v1/status", "/metrics", "/"]:
            text = http_get(hub.metrics_port, path)
            check(FEEDER_TOKEN not in text and token_hash not in text,
                  "%s shows neither the token nor its hash" % path)


def test_peer_subscriptions_are_narrowed_and_filtered(binary):
    """the spoke asks for everything ("/"); it gets /zeek/ without /zeek/secret/, and the
    hub says so in an error event"""
    with Cleanup() as cleanup, tempfile.TemporaryDirectory() as tmp:
        hub, spoke, path = hub_and_spoke(cleanup, binary, tmp, spoke_topics="/")
        hub.wait_for(is_status("peer_added"), what="the spoke's peering")
        err = hub.wait_for(is_access_error, what="the narrowing")
        check('subscription "/" narrowed to "/zeek/": no subscribe rule of identity "spoke" '
              'matches' in err, "the narrowing names the rule: %s" % err)
        feeder = cleanup.add(ws_client(hub, token=FEEDER_TOKEN))
        until_received(spoke, feeder, "/zeek/ready")
        for topic in ["/zeek/logs/a", "/zeek/secret/s", "/other/o", "/zeek/end"]:
            publish(feeder, topic, "x")
        spoke.wait_for(received("/zeek/end", "x"), what="the last message")
        got = [l for l in spoke.lines if l.startswith("received ") and "probe" not in l]
        check_eq(got, ["received /zeek/logs/a x", "received /zeek/end x"],
                 "what the spoke received")
        wait_metric(hub.metrics_port, 'broker_access_refusals_total{identity="spoke",'
                    'rule="deny subscribe \\"/zeek/secret/\\"",what="deliver"}',
                    lambda v: v == 1, what="the filtered delivery")


def test_unknown_certificate_is_refused_with_a_reason(binary):
    """a verified certificate that no identity names is refused after TLS; the dialer
    learns why, the hub logs and counts it"""
    with Cleanup() as cleanup, tempfile.TemporaryDirectory() as tmp:
        hub, spoke, path = hub_and_spoke(cleanup, binary, tmp, rules=UNKNOWN)
        line = spoke.wait_for(lambda l: l.startswith("error peer_invalid"),
                              what="the refusal at the spoke")
        check("access denied: authentication failed: the certificate (cn:worker-1, "
              "dns:worker-1.zeek.example) belongs to no identity" in line, "the spoke learns why: %s" % line)
        hub.wait_for(lambda l: "authentication failed (certificate) from 127.0.0.1:" in l,
                     what="the hub's log line", stderr=True)
        hub.wait_for(lambda l: l.startswith("error access_denied peering with 127.0.0.1:"),
                     what="the hub's error event")
        wait_metric(hub.metrics_port,
                    'broker_access_authentication_failures_total{mechanism="certificate"}',
                    lambda v: v >= 1, what="the failure counted")
        check(not hub.matching(is_status("peer_added")), "no peering")


def test_reload_widens_and_revokes_without_dropping_others(binary):
    """SIGHUP widens the spoke's rights on the live peering; removing its certificate from
    the rules unpeers it"""
    with Cleanup() as cleanup, tempfile.TemporaryDirectory() as tmp:
        hub, spoke, path = hub_and_spoke(cleanup, binary, tmp, spoke_topics="/")
        hub.wait_for(is_status("peer_added"), what="the spoke's peering")
        spoke_client_node = cleanup.add(Node(binary, LOCAL + ["--peers", peer_uri(spoke.port)],
                                             "edge", tls=EDGE_TLS, web_socket=True))
        spoke_client_node.wait_for(is_status("peer_added"), what="the edge's peering")
        client = cleanup.add(ws_client(spoke_client_node))
        feeder = cleanup.add(ws_client(hub, token=FEEDER_TOKEN))
        until_received(hub, client, "/zeek/logs/ready")
        publish(client, "/zeek/notice/before", "x")
        publish(feeder, "/other/before", "x")
        publish(client, "/zeek/logs/mark", "x")
        hub.wait_for(received("/zeek/logs/mark", "x"), what="the mark")
        check(not hub.matching(received("/zeek/notice/before", "x")), "refused before")
        write(path, WIDER)
        hub.send_signal(signal.SIGHUP)
        hub.wait_count(lambda l: "security: rules from " in l, 2, what="the reload",
                       stderr=True)
        publish(client, "/zeek/notice/after", "x")
        hub.wait_for(received("/zeek/notice/after", "x"), what="a newly allowed message")
        deadline = time.monotonic() + WAIT
        while not spoke.matching(received("/other/after", "x")):
            check(time.monotonic() < deadline, "the spoke receives /other/ after the reload")
            publish(feeder, "/other/after", "x")
            time.sleep(0.1)
        check(not spoke.matching(received("/other/before", "x")), "not before the reload")
        check(not hub.matching(is_status("peer_lost")) and not hub.matching(
            is_status("peer_removed")), "the peering stayed up")
        write(path, UNKNOWN)
        hub.send_signal(signal.SIGHUP)
        line = hub.wait_for(is_status("peer_removed"), what="the spoke unpeered")
        check("identity revoked by a reload of the rules" in line, "why: %s" % line)
        hub.wait_for(lambda l: is_access_error(l) and "no longer has an identity" in l,
                     what="the error event")
        check(hub.alive() and spoke.alive(), "both nodes run on")


PONG_RULES = """identity.anonymous {
  publish = ["/pp"]
  subscribe = ["/pp"]
%s}
"""


def pong_node(cleanup, tmp, binary, extra_rules=""):
    """A plain-TCP pong node whose rules cover the anonymous peer, and a raw peer (Broker's
    pinger) subscribed to /pp."""
    path = os.path.join(tmp, "rules.conf")
    write(path, PONG_RULES % extra_rules)
    node = cleanup.add(Node(binary, ["-m", "pong", "-t", "/pp", "-v",
                                     "--broker.security.rules-file=" + path],
                            "pong", metrics=True))
    peer = cleanup.add(bp.RawPeer.dial("127.0.0.1", node.port, bp.random_id(), ["/pp"]))
    node.wait_for(is_status("peer_added", bp.id_text(peer.own_id)), what="peer_added")
    return node, peer


def ping(peer, topic, i):
    # ("ping", i, "x"), as Broker's broker-node sends it.
    peer.publish(topic, bp.encode_vector([bp.encode_string("ping"), bp.encode_count(i),
                                          bp.encode_string("x")]))


def next_pong(peer):
    while True:
        msg = peer.next_message()
        if msg["type"] == bp.DATA:
            return msg["topic"].decode(), msg["payload"]


def writes_through(node):
    items = json.loads(http_get(node.metrics_port, "/v1/status"))["peers"]["items"]
    check_eq(len(items), 1, "one peer")
    return items[0].get("writes_through", 0)


def test_write_through_to_peers_keeps_to_the_rules(binary):
    """on plain TCP, where the thread that routes an answer writes it to an idle peer
    itself: with rules that need no per-delivery check pongs still go through; with a
    filtered subscription they go through the peer's strand, and a pong under the denied
    part never reaches the peer"""
    count = 20
    with Cleanup() as cleanup, tempfile.TemporaryDirectory() as tmp:
        node, peer = pong_node(cleanup, tmp, binary)
        for i in range(count):
            ping(peer, "/pp", i)
            check_eq(next_pong(peer)[0], "/pp", "pong %d" % i)
        through = writes_through(node)
        check(through >= count // 2, "at least %d of %d pongs written through, got %d"
              % (count // 2, count, through))
    with Cleanup() as cleanup, tempfile.TemporaryDirectory() as tmp:
        node, peer = pong_node(cleanup, tmp, binary, '  deny-subscribe = ["/pp/secret/"]\n')
        for i in range(count):
            ping(peer, "/pp/secret/x", i)  # Allowed to publish; its pong is not delivered.
            ping(peer, "/pp", i)
            topic, _ = next_pong(peer)
            check_eq(topic, "/pp", "only pongs on /pp arrive (round %d)" % i)
        check_eq(writes_through(node), 0, "a filtered peering is written by its strand only")
        wait_metric(node.metrics_port, 'broker_access_refusals_total{identity="anonymous",'
                    'rule="deny subscribe \\"/pp/secret/\\"",what="deliver"}',
                    lambda v: v == count, what="%d pongs refused" % count)


if __name__ == "__main__":
    run_tests([test_relayed_messages_are_checked_against_the_peer,
               test_peer_subscriptions_are_narrowed_and_filtered,
               test_unknown_certificate_is_refused_with_a_reason,
               test_reload_widens_and_revokes_without_dropping_others,
               test_write_through_to_peers_keeps_to_the_rules], limit=100)
