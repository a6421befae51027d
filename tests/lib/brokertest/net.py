"""Ports on 127.0.0.1 and a node's Prometheus metrics.

    port = free_port()                          # for options that cannot take 0
    m = scrape_metrics(node.metrics_port)       # {'broker_connections{type="native"}': 2.0, ...}
    wait_metric(node.metrics_port, 'broker_connections{type="web-socket"}', lambda v: v == 0)
"""

import socket
import time
import urllib.request

from .checks import TestFailure, check, check_eq

LOCALHOST = "127.0.0.1"
WEB_SOCKET_PATH = "/v1/messages/json"
METRICS_TIMEOUT = 10.0
METRICS_POLL = 0.05


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago (bound and released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOCALHOST, 0))
        return s.getsockname()[1]


def addr(port):
    return "%s:%d" % (LOCALHOST, port)


def parse_metrics(text):
    """Prometheus text format as {'name{labels}': value}; comments are skipped."""
    result = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        key, _, value = line.rpartition(" ")
        try:
            result[key] = float(value)
        except ValueError:
            raise TestFailure("not a metric line: %r" % line) from None
    return result


def scrape_metrics(port, timeout=METRICS_TIMEOUT):
    """GET /metrics on 127.0.0.1:`port`, parsed; fails unless it is 200 text/plain."""
    with urllib.request.urlopen("http://%s/metrics" % addr(port), timeout=timeout) as res:
        check_eq(res.status, 200, "status of GET /metrics")
        kind = res.headers.get("Content-Type", "")
        check(kind.startswith("text/plain"), "Content-Type of /metrics: %r" % kind)
        return parse_metrics(res.read().decode())


def wait_metric(port, key, pred, timeout=METRICS_TIMEOUT, what=None):
    """Scrapes until `pred(value of key)` holds and returns those metrics; fails after
    `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        m = scrape_metrics(port)
        if key in m and pred(m[key]):
            return m
        if time.monotonic() > deadline:
            raise TestFailure("timed out waiting for %s; %s = %r"
                              % (what or "a metric", key, m.get(key)))
        time.sleep(METRICS_POLL)
