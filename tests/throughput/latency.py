"""--latency: the server measures one-way latency and echoes each event; the client measures
round trips. Both print p50/p99/p99.9 (text and JSON), with one sample per event."""

import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.checks import check, check_eq, run_tests  # noqa: E402
from brokertest.procs import Cleanup, Proc  # noqa: E402

EVENTS = 400
RATE = 400

LATENCY_LINE = re.compile(r"^latency: p50=([0-9.]+)us p99=([0-9.]+)us p99\.9=([0-9.]+)us "
                          r"max=([0-9.]+)us samples=(\d+) \((one-way|round-trip/2)\)$")


def check_percentiles(lat, what):
    check(0 <= lat["p50_us"] <= lat["p99_us"] <= lat["p99_9_us"] <= lat["max_us"],
          "%s percentiles out of order: %r" % (what, lat))


def json_output(tp, event_type):
    with Cleanup() as c:
        server = c.add(Proc(tp, ["--server", "127.0.0.1:0", "--latency", "--json",
                                 "-n", str(EVENTS)], name="server"))
        port = server.listening_port()
        client = c.add(Proc(tp, ["--latency", "-t", str(event_type), "-r", str(RATE),
                                 "-n", str(EVENTS), "--json", "127.0.0.1:%d" % port],
                            name="client -t %d" % event_type))
        client.expect_exit(0)
        server.expect_exit(0)
        got = client.summary()["latency"]
        check_eq(got["method"], "round-trip/2", "client latency method")
        check_eq(got["samples"], EVENTS, "round trips measured by the client (type %d)"
                 % event_type)
        check_percentiles(got, "client")
        got = server.summary()["latency"]
        check_eq(got["method"], "one-way", "server latency method")
        check_eq(got["samples"], EVENTS, "one-way samples of the server (type %d)" % event_type)
        check_percentiles(got, "server")


def text_output(tp, node):
    with Cleanup() as c:
        server = c.add(Proc(tp, ["--server", "127.0.0.1:0", "--latency", "-n", str(EVENTS)],
                            name="server"))
        port = server.listening_port()
        client = c.add(Proc(tp, ["--latency", "-r", str(RATE), "-n", str(EVENTS),
                                 "127.0.0.1:%d" % port], name="client"))
        client.expect_exit(0)
        server.expect_exit(0)
        for proc, method in ((client, "round-trip/2"), (server, "one-way")):
            line = proc.wait_for(lambda l: l.startswith("latency: "))
            m = LATENCY_LINE.match(line)
            check(m is not None, "%s: malformed latency line %r" % (proc.name, line))
            check_eq(m.group(6), method, "%s latency method" % proc.name)
            check_eq(int(m.group(5)), EVENTS, "%s latency samples" % proc.name)


def json_output_of_every_type(tp, node):
    for event_type in (0, 1, 2, 3):
        json_output(tp, event_type)


run_tests([json_output_of_every_type, text_output], limit=150,
          binaries=("broker-throughput", "broker-node"))
