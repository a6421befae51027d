#!/usr/bin/env python3
"""web.status: GET /v1/status and /metrics of a real node while peers and clients connect,
lag and leave.

- Two nodes peer with A: /v1/status lists both with their ids, direction, TLS, queues and
  the subscriptions they announced; broker_connections{type="native"} is 2.
- A WebSocket client connects: it is listed with its subscriptions;
  broker_connections{type="web-socket"} is 1.
- A raw peer that stops reading (lag) fills its queue: drops show in its entry, in the
  drop table and in the per-peer metrics; pings it sends are counted as processed pings.
- Nodes leave: the list shrinks, and an outgoing peering to a node that is gone shows as
  a dial with the error of its last attempt; peerings and losses are among the recent
  events.
- An inbound peer's ephemeral source port is source_port, not port; a store is listed by
  its name; -N names the node (unless broker.metrics.endpoint-name does).
- Bad requests get 400, unknown paths 404; --broker.metrics.status-page=false turns the
  API and the page off, not /metrics.

Usage: status.py <path to broker-node>
"""

import json
import os
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest import peer as bp  # noqa: E402
from brokertest.checks import TestFailure, check, check_eq, run_tests  # noqa: E402
from brokertest.net import LOCALHOST, scrape_metrics  # noqa: E402
from brokertest.nodes import Node, is_status, peer_uri  # noqa: E402
from brokertest.procs import Cleanup  # noqa: E402
from brokertest.rawws import RawClient  # noqa: E402

WAIT = 15.0
POLL = 0.05
# The lagging peer: a tiny receive buffer and queue, and enough bytes to overflow both.
LAG_RCVBUF = 16 * 1024
LAG_QUEUE = 8
LAG_MESSAGES = 300
LAG_VALUE = 32 * 1024


def get(port, path):
    with urllib.request.urlopen("http://%s:%d%s" % (LOCALHOST, port, path), timeout=10) as r:
        return r.status, r.headers.get("Content-Type", ""), r.read()


def status(port, query=""):
    code, kind, body = get(port, "/v1/status" + query)
    check_eq(code, 200, "status of GET /v1/status")
    check(kind.startswith("application/json"), "Content-Type of /v1/status: %r" % kind)
    return json.loads(body)


def wait_status(port, pred, what):
    deadline = time.monotonic() + WAIT
    while True:
        st = status(port)
        if pred(st):
            return st
        if time.monotonic() > deadline:
            raise TestFailure("timed out waiting for %s; last status:\n%s"
                              % (what, json.dumps(st, indent=1)[:4000]))
        time.sleep(POLL)


def http_code(port, path):
    try:
        return get(port, path)[0]
    except urllib.error.HTTPError as e:
        return e.code


def peer_ids(st):
    return sorted(p["id"] for p in st["peers"]["items"])


def test_peers_clients_lag_leave(binary):
    """/v1/status and /metrics follow peers and clients as they connect, lag and leave"""
    with Cleanup() as cleanup:
        a = cleanup.add(Node(binary, ["-t", "/t", "-v", "--broker.peer-buffer-size=%d" % LAG_QUEUE,
                                      "--broker.peer-overflow-policy=drop_newest"], "A",
                             web_socket=True, metrics=True))
        mport = a.metrics_port
        st = status(mport)
        check_eq(st["peers"]["total"], 0, "peers before any peering")
        check(st["endpoint"]["uptime_seconds"] >= 0, "an uptime")
        check("/t" in st["announced"], "A announces its topic /t: %r" % st["announced"])

        b = cleanup.add(Node(binary, ["-t", "/b", "-v", "--peers", peer_uri(a.port)], "B"))
        b.wait_for(is_status("peer_added"), what="B's peering with A")
        added = a.wait_for(is_status("peer_added"), what="A's peer_added for B")
        st = wait_status(mport, lambda s: s["peers"]["total"] == 1, "B in A's status")
        pb = st["peers"]["items"][0]
        check_eq(pb["direction"], "inbound", "B dialed A")
        # B's source port is ephemeral: reported as such, not as B's port.
        check_eq(pb["port"], None, "no port for an inbound peer")
        check(isinstance(pb["source_port"], int), "the source port: %r" % pb)
        check_eq(pb["tls"], "plain", "TLS of B's peering (--broker.disable-ssl)")
        check_eq(pb["state"], "peered", "B's state")
        check_eq(pb["queue"]["capacity"], LAG_QUEUE, "B's queue capacity")
        check_eq(pb["queue"]["policy"], "drop_newest", "B's queue policy")
        check("/b" in pb["subscriptions"], "B announced /b: %r" % pb["subscriptions"])
        check_eq(pb["id"], added.split()[2], "B's id, as A's peer_added line names it")

        ws = cleanup.add(RawClient(a.ws_port))
        ws.send_text(json.dumps(["/ws/"]))
        check('"ack"' in ws.recv_text(), "the client's ack")
        st = wait_status(mport, lambda s: s["clients"]["total"] == 1, "the WebSocket client")
        client = st["clients"]["items"][0]
        check_eq(client["subscriptions"], ["/ws/"], "the client's subscriptions")
        check_eq(client["direction"], "inbound", "the client's direction")
        check_eq(client["app"], None, "a client without X-Application-Name")
        check(any("peered with" in e["message"] for e in st["events"]),
              "the peering among the recent events: %r" % st["events"][-5:])
        m = scrape_metrics(mport)
        check_eq(m['broker_connections{type="native"}'], 1, "native connections with B")
        check_eq(m['broker_connections{type="web-socket"}'], 1, "web-socket connections")

        # Lag: a raw peer subscribed to /t that never reads; a publisher floods /t.
        lagger = cleanup.add(bp.RawPeer.dial(LOCALHOST, a.port, bp.random_id(), ["/t"],
                                             rcvbuf=LAG_RCVBUF))
        lag_id = bp.id_text(lagger.own_id)
        for n in range(3):
            lagger.ping(b"ping %d" % n)
        st = wait_status(mport, lambda s: s["peers"]["total"] == 2, "the lagging peer")
        check(st["totals"]["pings"] >= 3, "3 pings counted: %r" % st["totals"])
        check(scrape_metrics(mport)['broker_processed_messages_total{type="ping"}'] >= 3,
              "processed pings in the metrics")
        publisher = cleanup.add(bp.RawPeer.dial(LOCALHOST, a.port, bp.random_id(), []))
        filler = "x" * LAG_VALUE
        publisher.conn.send(b"".join(publisher.data_frame("/t/x", bp.encode_string(filler))
                                     for _ in range(LAG_MESSAGES)))

        def lagging(s):
            for p in s["peers"]["items"]:
                if p["id"] == lag_id and p["dropped"] > 0 and p["queue"]["size"] > 0:
                    return True
            return False

        st = wait_status(mport, lagging, "drops at the lagging peer")
        lag = [p for p in st["peers"]["items"] if p["id"] == lag_id][0]
        check(lag["messages_out"] + lag["dropped"] <= LAG_MESSAGES,
              "every message counted once: %r" % lag)
        check(any(d["kind"] == "peer" and d["policy"] == "drop_newest" and d["count"] > 0
                  for d in st["drops"]), "the drop table names peer/drop_newest: %r" % st["drops"])
        m = scrape_metrics(mport)
        key = 'broker_peer_dropped_messages_total{peer="%s",address="%s:%d"}' % (
            lag_id, lag["address"], lag["source_port"])
        check(m.get(key, 0) > 0, "per-peer drops in the metrics: %s = %r" % (key, m.get(key)))
        check(m['broker_handler_dropped_messages_total{kind="peer",policy="drop_newest"}'] > 0,
              "drops by kind and policy")
        pub_id = bp.id_text(publisher.own_id)
        wait_status(mport, lambda s: any(p["id"] == pub_id and p["messages_in"] == LAG_MESSAGES
                                         for p in s["peers"]["items"]),
                    "the publisher's %d messages counted in" % LAG_MESSAGES)

        # Leave: the lagging peer, the publisher and the client go; then B.
        lagger.close()
        publisher.close()
        ws.close()
        wait_status(mport, lambda s: s["peers"]["total"] == 1 and s["clients"]["total"] == 0,
                    "the lagging peer, the publisher and the client gone")
        b.stop()
        wait_status(mport, lambda s: s["peers"]["total"] == 0, "B gone")
        check_eq(scrape_metrics(mport)['broker_connections{type="native"}'], 0,
                 "native connections after everyone left")


def test_dial_to_a_gone_node(binary):
    """an outgoing peering whose node is gone shows as a dial, then as a peer again"""
    with Cleanup() as cleanup:
        b = cleanup.add(Node(binary, ["-t", "/b"], "B"))
        bport = b.port
        a = cleanup.add(Node(binary, ["-v", "--peer-retry=1", "--peers", peer_uri(bport)], "A",
                             metrics=True))
        st = wait_status(a.metrics_port, lambda s: s["peers"]["total"] == 1, "A peered with B")
        p = st["peers"]["items"][0]
        check_eq(p["direction"], "outbound", "A dialed B")
        check_eq(p["port"], bport, "the dialed port")
        b.kill()
        st = wait_status(a.metrics_port, lambda s: s["peers"]["total"] == 0
                         and len(s["peers"]["dials"]) == 1, "the dial to B")
        dial = st["peers"]["dials"][0]
        check_eq((dial["address"], dial["port"]), (LOCALHOST, bport), "the dial's target")
        check(dial["state"] in ("waiting", "connecting"), "the dial's state: %r" % dial)
        check_eq(dial["id"], p["id"], "the dial remembers B's id")
        # Why it waits: the last attempt's error, once one failed.
        st = wait_status(a.metrics_port, lambda s: s["peers"]["dials"]
                         and s["peers"]["dials"][0]["last_error"], "the dial's last error")
        err = st["peers"]["dials"][0]["last_error"]
        check("cannot connect to %s:%d" % (LOCALHOST, bport) in err, "the dial's error: %r" % err)
        check(any("lost peer" in e["message"] for e in st["events"]),
              "the lost peer among the recent events: %r" % st["events"][-5:])


def test_requests(binary):
    """bad queries get 400, unknown paths 404; status-page=false leaves only /metrics"""
    with Cleanup() as cleanup:
        a = cleanup.add(Node(binary, [], "A", metrics=True))
        check_eq(http_code(a.metrics_port, "/v1/status?limit=x"), 400, "limit=x")
        check_eq(http_code(a.metrics_port, "/v1/status?color=red"), 400, "an unknown parameter")
        check_eq(http_code(a.metrics_port, "/nope"), 404, "an unknown path")
        st = status(a.metrics_port, "?limit=0")
        check_eq(st["local"]["hubs"]["items"], [], "limit=0 lists nothing")
        check_eq(st["local"]["hubs"]["total"], 1, "but counts the node's hub")
        code, kind, body = get(a.metrics_port, "/")
        check(kind.startswith("text/html") and b"page.js" in body, "the page at /")
        off = cleanup.add(Node(binary, ["--broker.metrics.status-page=false"], "B", metrics=True))
        check_eq(http_code(off.metrics_port, "/v1/status"), 404, "status API turned off")
        check_eq(http_code(off.metrics_port, "/"), 404, "page turned off")
        check_eq(http_code(off.metrics_port, "/metrics"), 200, "metrics stay")


def test_endpoint_name(binary):
    """BROKER_METRICS_ENDPOINT_NAME labels every metric and names the node in the status"""
    with Cleanup() as cleanup:
        a = cleanup.add(Node(binary, [], "A", metrics=True,
                             env={"BROKER_METRICS_ENDPOINT_NAME": "manager"}))
        m = scrape_metrics(a.metrics_port)
        check(all('endpoint="manager"' in key for key in m), "every sample has the label")
        check('broker_connections{endpoint="manager",type="native"}' in m,
              "Broker's family with the endpoint label")
        check_eq(status(a.metrics_port)["endpoint"]["name"], "manager", "the status's name")
        # broker-node -N names the node too (unless the option names it otherwise).
        n = cleanup.add(Node(binary, ["-N", "worker-1"], "N", metrics=True))
        check_eq(status(n.metrics_port)["endpoint"]["name"], "worker-1", "-N in the status")
        check('broker_connections{endpoint="worker-1",type="native"}'
              in scrape_metrics(n.metrics_port), "-N labels the metrics")
        both = cleanup.add(Node(binary, ["-N", "worker-2"], "B", metrics=True,
                                env={"BROKER_METRICS_ENDPOINT_NAME": "manager"}))
        check_eq(status(both.metrics_port)["endpoint"]["name"], "manager",
                 "the option wins over -N")


def test_stores_by_name(binary):
    """a store shows up by its name, in the queues and in the store table"""
    with Cleanup() as cleanup:
        a = cleanup.add(Node(binary, ["--master-stores", "users"], "A", metrics=True))
        st = wait_status(a.metrics_port, lambda s: s["local"]["stores"]["total"] == 1
                         and s["local"]["stores"]["reports"], "the store in the status")
        check_eq(st["local"]["stores"]["items"][0]["name"], "users", "the store handler's name")
        check_eq(st["local"]["stores"]["reports"][0]["name"], "users", "the store's report")


run_tests([test_peers_clients_lag_leave, test_dial_to_a_gone_node, test_requests,
           test_endpoint_name, test_stores_by_name], limit=170)
