#!/usr/bin/env python3
"""System tests: what a node exposes at its defaults, and what it prints of its secrets.

The WebSocket and metrics servers authenticate nobody, so they bind 127.0.0.1 unless an
address is configured; peerings keep Broker's all-interfaces default. Every listener logs
who can reach it and whether TLS is on (a warning when other hosts can reach it and nobody
is authenticated). --dump-config, --check-config and error messages never print
broker.ssl.passphrase (doc/configuration.md, "Secrets" and "Listening addresses").

Usage: safe_defaults.py <path to broker-node>
"""

import os
import socket
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.checks import check, run_tests  # noqa: E402
from brokertest.nodes import NODE_TLS, Node, cert  # noqa: E402
from brokertest.procs import Cleanup, run_once  # noqa: E402

SECRET = "correct-horse-battery-staple"
HIDDEN = "<secret, not shown>"


def security_line(node, service):
    """The node's start-up line about `service` (peering, web-socket, metrics)."""
    prefix = "security: %s on " % service
    return node.wait_for(lambda l: prefix in l, what="the %s security line" % service,
                         stderr=True)


def other_local_address():
    """An address of this host that is not loopback, or None (then nothing can tell
    127.0.0.1 from all interfaces)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.255.255.255", 9))  # No packet is sent for a UDP connect.
            address = s.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else address


def connects(address, port):
    try:
        with socket.create_connection((address, port), timeout=2):
            return True
    except OSError:
        return False


def test_servers_bind_loopback_by_default(binary):
    """WebSocket and metrics bind 127.0.0.1 by default, and say so; peering says it is open"""
    with Cleanup() as cleanup:
        node = cleanup.add(Node(binary, ["-t", "/t"], web_socket=True, metrics=True))
        ws = security_line(node, "web-socket")
        check(ws.endswith("web-socket on 127.0.0.1:%d (loopback only), TLS: off, clients: not "
                          "authenticated" % node.ws_port), ws)
        check(" info " in ws, "a loopback listener is worth an info line: %s" % ws)
        metrics = security_line(node, "metrics")
        check(metrics.endswith("metrics on 127.0.0.1:%d (loopback only), TLS: off, not "
                               "authenticated (/metrics, /v1/status, the web view)"
                               % node.metrics_port), metrics)
        peering = security_line(node, "peering")
        check(peering.endswith("peering on 0.0.0.0:%d (all IPv4 interfaces), TLS: off"
                               % node.port), peering)
        check(" warning " in peering, "an open, unauthenticated listener warns: %s" % peering)
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % node.metrics_port,
                                    timeout=10) as r:
            check(r.status == 200, "/metrics answers on 127.0.0.1")
        other = other_local_address()
        if other is not None:
            check(connects(other, node.port), "the peering port is open on %s" % other)
            check(not connects(other, node.ws_port),
                  "the WebSocket port is closed on %s" % other)
            check(not connects(other, node.metrics_port),
                  "the metrics port is closed on %s" % other)


def test_configured_addresses(binary):
    """an address configured for WebSocket and metrics is used, and its reach logged"""
    with Cleanup() as cleanup:
        node = cleanup.add(Node(binary, ["--listen-address=127.0.0.1",
                                         "--broker.web-socket.address=0.0.0.0",
                                         "--broker.metrics.address=0.0.0.0"],
                                web_socket=True, metrics=True, plain=False))
        ws = security_line(node, "web-socket")
        check(ws.endswith("web-socket on 0.0.0.0:%d (all IPv4 interfaces), TLS: anonymous "
                          "(encrypts, authenticates no one), clients: not authenticated"
                          % node.ws_port), ws)
        check(" warning " in ws, ws)
        check(" warning " in security_line(node, "metrics"), "metrics on 0.0.0.0 warns")
        peering = security_line(node, "peering")
        check(peering.endswith("peering on 127.0.0.1:%d (loopback only), TLS: anonymous "
                               "(encrypts, authenticates no one)" % node.port), peering)
        other = other_local_address()
        if other is not None:
            check(connects(other, node.metrics_port), "metrics open on %s" % other)
            check(not connects(other, node.port), "peering closed on %s" % other)


def test_dump_config_masks_the_passphrase(binary):
    """--dump-config shows that the passphrase is set, never the passphrase"""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "node.cfg")
        with open(path, "w") as f:
            f.write('broker.ssl.passphrase = "%s"\nbroker.ttl = 7\n' % SECRET)
        code, out, err = run_once(binary, ["--config-file=" + path, "--dump-config"])
        check(code == 0, "--dump-config exits 0: %s" % err)
        check(SECRET not in out + err, "the passphrase is not printed:\n%s%s" % (out, err))
        check(any(l.startswith("# broker.ssl.passphrase = " + HIDDEN) and path + ":1:1" in l
                  for l in out.splitlines()), "the passphrase's line:\n%s" % out)
        check("\nbroker.ttl = 7 " in out, "the other values are shown:\n%s" % out)
        # From the command line: masked too, with a notice about ps.
        code, out, err = run_once(binary, ["--broker.ssl.passphrase=" + SECRET, "--dump-config"])
        check(code == 0 and SECRET not in out + err, "masked:\n%s%s" % (out, err))
        check("given on the command line" in err, "a notice about the command line: %s" % err)
        # --check-config reads the same file and prints no secret either: not when the
        # passphrase alone is refused (broker.ssl.* without a certificate and key) ...
        code, out, err = run_once(binary, ["--config-file=" + path, "--check-config"])
        check(code == 1 and SECRET not in out + err, "check-config:\n%s%s" % (out, err))
        # ... nor when the passphrase is wrong for the test PKI's key ...
        tls = ["--broker.ssl.certificate=" + cert("server.pem"),
               "--broker.ssl.key=" + cert("server.enc.key"),
               "--broker.ssl.cafile=" + cert("ca.pem")]
        code, out, err = run_once(binary, ["--config-file=" + path, "--check-config"] + tls)
        check(code == 1 and SECRET not in out + err, "check-config, wrong key:\n%s%s" % (out, err))
        # ... nor when it is right.
        with open(path, "w") as f:
            f.write('broker.ssl.passphrase = "%s"\n' % NODE_TLS["passphrase"])
        code, out, err = run_once(binary, ["--config-file=" + path, "--check-config"] + tls)
        check(code == 0 and NODE_TLS["passphrase"] not in out + err,
              "check-config, right key:\n%s%s" % (out, err))


if __name__ == "__main__":
    run_tests([test_servers_bind_loopback_by_default, test_configured_addresses,
               test_dump_config_masks_the_passphrase], limit=90)
