#!/usr/bin/env python3
"""web.page: the node's web view in a real headless browser (Debian's chromium).

A node A with two peers (B dials A, A dials C) and a WebSocket client serves its page at /.
Chromium loads it, runs its script (which polls /v1/status) and:
- dumps the DOM: the mesh shows A itself and both peers by their endpoint ids, the
  WebSocket group counts one client, and the queue bars list both peers;
- takes a screenshot for people to look at, saved as $BROKER_SCREENSHOT (CMake sets it to
  <build>/tests/web/web-page.png); the path is printed.
Skipped (77) without chromium; scripts/install-deps installs it.

Usage: page.py <path to broker-node>
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.checks import TestFailure, check, check_eq, run_tests, skip_script  # noqa: E402
from brokertest.net import LOCALHOST, free_port  # noqa: E402
from brokertest.nodes import Node, is_status, peer_uri  # noqa: E402
from brokertest.procs import Cleanup  # noqa: E402
from brokertest.rawws import BINARY, RawClient  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# The flags this machine needs (no sandbox as root, no network beyond loopback).
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--window-size=1280,900",
                  # Virtual time runs the page's timers and its polls (network time does
                  # not count) before the DOM is dumped or the picture taken.
                  "--virtual-time-budget=4000"]
BROWSER_TIMEOUT = 60
WAIT = 15.0
SCREENSHOT = os.environ.get("BROKER_SCREENSHOT") or os.path.join(tempfile.gettempdir(),
                                                                  "broker-web-page.png")

if not CHROMIUM:
    skip_script("chromium not found (apt-get install chromium, or scripts/install-deps)")


def browser(url, *args):
    """Runs headless chromium on `url` with a fresh profile; returns its stdout."""
    with tempfile.TemporaryDirectory(prefix="broker-chromium-") as profile:
        # A budget among `args` replaces the default one.
        flags = [f for f in CHROMIUM_FLAGS
                 if not (f.startswith("--virtual-time-budget=")
                         and any(a.startswith("--virtual-time-budget=") for a in args))]
        res = subprocess.run([CHROMIUM, *flags, "--user-data-dir=" + profile, *args,
                              url], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             timeout=BROWSER_TIMEOUT)
    if res.returncode != 0:
        raise TestFailure("chromium exited with %d:\n%s" % (res.returncode,
                                                             res.stderr.decode()[-3000:]))
    return res.stdout.decode("utf-8", "replace")


def status(port):
    url = "http://%s:%d/v1/status" % (LOCALHOST, port)
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


def wait_peers(port, n):
    deadline = time.monotonic() + WAIT
    while True:
        st = status(port)
        if st["peers"]["total"] == n and st["clients"]["total"] == 1:
            return st
        check(time.monotonic() < deadline, "A has %d peers and a client" % n)
        time.sleep(0.05)


def test_page_shows_the_node_and_two_peers(binary):
    """the page at / shows the node, its two peers and its client in a real browser"""
    with Cleanup() as cleanup:
        c = cleanup.add(Node(binary, ["-t", "/zeek/logs/,/c/"], "C"))
        a = cleanup.add(Node(binary, ["-t", "/a/", "-v", "--peers", peer_uri(c.port)], "A",
                             web_socket=True, metrics=True,
                             env={"BROKER_METRICS_ENDPOINT_NAME": "node-a"}))
        b = cleanup.add(Node(binary, ["-t", "/b/", "-v", "--peers", peer_uri(a.port)], "B"))
        b.wait_for(is_status("peer_added"), what="B's peering with A")
        ws = cleanup.add(RawClient(a.ws_port))
        ws.send_text(json.dumps(["/ws/"]))
        ws.recv_text()
        st = wait_peers(a.metrics_port, 2)
        own = st["endpoint"]["id"]
        peers = sorted(p["id"] for p in st["peers"]["items"])
        url = "http://%s:%d/" % (LOCALHOST, a.metrics_port)

        dom = browser(url, "--dump-dom")
        check('data-node="%s"' % own in dom, "the page shows node A (%s)" % own)
        for p in peers:
            check('data-peer="%s"' % p in dom, "the page shows peer %s" % p)
        check_eq(len(re.findall(r'data-peer="', dom)), 2, "peers drawn")
        check(re.search(r'data-group="WebSocket"[^>]*>.*?<text[^>]*>1</text>', dom),
              "the WebSocket group counts one client")
        check("broker node node-a" in dom, "the title names the endpoint")
        check(dom.count('class="queue"') >= 2, "queue bars for the peers")
        check("/zeek/logs/" in dom, "C's announced subscriptions under C")
        check("cannot reach the node" not in dom or 'hidden=""' in dom,
              "no error banner")

        os.makedirs(os.path.dirname(os.path.abspath(SCREENSHOT)), exist_ok=True)
        if os.path.exists(SCREENSHOT):
            os.remove(SCREENSHOT)
        browser(url, "--screenshot=" + os.path.abspath(SCREENSHOT))
        with open(SCREENSHOT, "rb") as f:
            head = f.read(8)
        check_eq(head, b"\x89PNG\r\n\x1a\n", "the screenshot is a PNG")
        check(os.path.getsize(SCREENSHOT) > 10_000, "the screenshot has content")
        print("screenshot of the web view: %s" % os.path.abspath(SCREENSHOT), flush=True)


def test_page_explains_itself(binary):
    """the page names the node (-N), inbound peers without their source port, why a dial
    waits, stores by name, client applications, recent events; says 1 peer; explains its
    totals"""
    with Cleanup() as cleanup:
        dead = free_port()
        a = cleanup.add(Node(binary, ["-N", "page-node", "--master-stores", "users",
                                      "--peer-retry=1", "--peers", peer_uri(dead)], "A",
                             web_socket=True, metrics=True))
        b = cleanup.add(Node(binary, ["-t", "/b/", "-v", "--peers", peer_uri(a.port)], "B"))
        b.wait_for(is_status("peer_added"), what="B's peering with A")
        ws = cleanup.add(RawClient(a.ws_port, extra_headers=[("X-Application-Name",
                                                               "zeek-rs/page")]))
        ws.send_frame(BINARY, json.dumps(["/ws/"]))
        ws.recv_text()
        deadline = time.monotonic() + WAIT
        while True:
            st = status(a.metrics_port)
            if (st["peers"]["total"] == 1 and st["clients"]["total"] == 1
                    and st["peers"]["dials"] and st["peers"]["dials"][0]["last_error"]
                    and st["local"]["stores"]["reports"]):
                break
            check(time.monotonic() < deadline, "A's peer, client, dial error and store")
            time.sleep(0.05)
        source_port = st["peers"]["items"][0]["source_port"]
        dom = browser("http://%s:%d/" % (LOCALHOST, a.metrics_port), "--dump-dom")
        check("broker node page-node" in dom, "-N names the node in the title")
        check("1 peer ·" in dom and "1 peers" not in dom, "one peer, in English")
        check("1 WebSocket client<" in dom, "one client, in English")
        check("from 127.0.0.1 ←" in dom, "the inbound peer by its address")
        # (The log lines among the recent events may name the connection's source port.)
        outside_events = re.sub(r'<ul id="events".*?</ul>', "", dom, flags=re.S)
        check("127.0.0.1:%d" % source_port not in outside_events,
              "no ephemeral source port (%d) shown as the peer's address" % source_port)
        check(re.search(r'class="why"[^>]*>cannot connect to 127\.0\.0\.1:%d' % dead, dom),
              "the dial says why it waits")
        check("store users (master)" in dom and 'data-store="users"' in dom,
              "the store by its name, in the queues and the store table")
        check("client zeek-rs/page 127.0.0.1:" in dom, "the client's application")
        check(re.search(r'<ul id="events"[^>]*>.*peered with', dom, re.S),
              "the peering among the recent events")
        check("without subscribers" in dom and "(unrouted)" in dom,
              "unrouted explained")
        check("times a source paused" in dom, "suspensions explained")
        check("hub #" not in dom and "store master #" not in dom, "no handler numbers as names")

        # First paint of a node nobody watched: no rates yet, not rates of 0.
        c = cleanup.add(Node(binary, [], "C", metrics=True))
        first = browser("http://%s:%d/" % (LOCALHOST, c.metrics_port), "--dump-dom",
                        "--virtual-time-budget=300")
        check("(measuring…)" in first, "the first paint says the rates are being measured")
        check("(last 0 s)" not in first, "no window of 0 s")
        check(re.search(r'<div class="rate"><b>–</b>', first), "no rate of 0 before a base")


run_tests([test_page_shows_the_node_and_two_peers, test_page_explains_itself], limit=170)
