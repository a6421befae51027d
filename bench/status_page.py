#!/usr/bin/env python3
"""What the web view costs a node: the node's CPU with 1000 idle WebSocket clients, with and
without the page open in a real headless browser (Debian's chromium; see doc/operations.md).

A broker-node serves WebSocket clients and its metrics port; --clients clients connect
(raw RFC 6455 clients, each subscribed to a topic of its own) and stay. In every round the
script measures the node's CPU (utime + stime from /proc/<pid>/stat) over --window seconds
without the page, then opens the page at / in headless chromium (it polls /v1/status once a
second, as for a person) and measures another window. The cost is the median of the
per-round differences, in percent of one core; the target is below 1. Without chromium,
--browser=python polls /v1/status?limit=40 once a second instead (what the page asks for).
At the end the script checks that the browser really polled: the node's rates had a base.
See bench/README.md.

    bench/status_page.py                                      # builds in build-bench/
    NO_BUILD=1 BUILD_DIR=build bench/status_page.py --reps 3  # with an existing build
"""

import json
import os
import shutil
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

import benchlib as bl  # noqa: E402  (it puts tests/lib on the path, for brokertest)
from brokertest.net import LOCALHOST  # noqa: E402
from brokertest.nodes import Node  # noqa: E402
from brokertest.procs import Proc  # noqa: E402
from brokertest.rawws import RawClient  # noqa: E402

OPTIONS = [
    ("--clients", int, 1000, "idle WebSocket clients of the node"),
    ("--reps", int, 5, "rounds (a window without the page, then one with it)"),
    ("--window", float, 10.0, "seconds of each CPU measurement"),
    ("--settle", float, 3.0, "seconds between opening the page and measuring"),
    ("--browser", str, "auto", "chromium, python (a poller like the page) or auto"),
]

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--window-size=1280,900",
                  "--remote-debugging-port=0"]
POLL_SECONDS = 1.0
PAGE_QUERY = "/v1/status?limit=40"


def status(port, query=""):
    with urllib.request.urlopen("http://%s:%d/v1/status%s" % (LOCALHOST, port, query),
                                timeout=10) as r:
        return json.loads(r.read())


class PythonPage:
    """Polls like the page does, in a thread."""

    def __init__(self, port):
        self.port, self.stop_flag = port, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop_flag.wait(POLL_SECONDS):
            status(self.port, "?limit=40")

    def stop(self):
        self.stop_flag.set()
        self.thread.join()


def open_page(run, browser, port, profile):
    if browser == "python":
        return PythonPage(port)
    url = "http://%s:%d/" % (LOCALHOST, port)
    return run.start(browser, CHROMIUM_FLAGS + ["--user-data-dir=" + profile, url], "chromium")


def close_page(page):
    if isinstance(page, PythonPage):
        page.stop()
    else:
        page.kill()


def cpu_window(pid, seconds):
    t0, c0 = time.monotonic(), bl.cpu_seconds(pid)
    time.sleep(seconds)
    return 100.0 * (bl.cpu_seconds(pid) - c0) / (time.monotonic() - t0)


def main():
    args = bl.parse_args(__doc__, OPTIONS)
    browser = args.browser
    if browser in ("auto", "chromium"):
        found = shutil.which("chromium")
        if not found and browser == "chromium":
            raise bl.BenchError("chromium not found (scripts/install-deps installs it)")
        browser = found or "python"
    with bl.Run("status_page", args) as run:
        bins = run.build("broker-node")
        node = run.start(bins["broker-node"], ["--broker.web-socket.max-clients=%d"
                                               % (args.clients + 10)],
                         "node", kind=Node, web_socket=True, metrics=True)
        run.progress("connecting %d WebSocket clients" % args.clients)
        clients = []
        for i in range(args.clients):
            c = RawClient(node.ws_port)
            c.send_text(json.dumps(["/bench/client-%05d/" % i]))
            c.recv_text()
            clients.append(c)
        total = status(node.metrics_port, "?limit=0")["clients"]["total"]
        if total != args.clients:
            raise bl.BenchError("the node has %d clients, not %d" % (total, args.clients))
        rows, diffs = [], []
        with tempfile.TemporaryDirectory(prefix="broker-bench-chromium-") as profile:
            for rep in range(args.reps):
                run.progress("round %d/%d" % (rep + 1, args.reps))
                without = cpu_window(node.pid, args.window)
                page = open_page(run, browser, node.metrics_port, profile)
                try:
                    time.sleep(args.settle)
                    with_page = cpu_window(node.pid, args.window)
                    polled = status(node.metrics_port, "?limit=0")["rates"]["window_seconds"]
                finally:
                    close_page(page)
                if polled <= 0:
                    raise bl.BenchError("the page did not poll /v1/status")
                diffs.append(with_page - without)
                rows.append([str(rep + 1), bl.fmt(without, 2), bl.fmt(with_page, 2),
                             bl.fmt(with_page - without, 2)])
                time.sleep(1.5)  # Let the last samples age out of the rate window.
        run.table(["round", "node CPU % without page", "with page", "difference"], rows)
        cost = bl.median(diffs)
        run.say("")
        run.say("# %d WebSocket clients, page in %s, %d rounds of %.0f s: the page costs the "
                "node %.2f %% of a core (median); target < 1 %%"
                % (args.clients, os.path.basename(browser), args.reps, args.window, cost))
        run.raw.update({"rounds": rows, "cost_pct": cost, "browser": browser})
        for c in clients:
            c.close()


if __name__ == "__main__":
    bl.run_main(main)
