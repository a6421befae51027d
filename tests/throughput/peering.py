"""broker-throughput over a native peering: the server receives every event the client
sends (--count on both sides), reports in JSON, and ends cleanly on SIGINT."""

import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.checks import check, check_eq, run_tests  # noqa: E402
from brokertest.procs import Cleanup, Proc  # noqa: E402

EVENTS = 10000


def all_events_arrive(tp, node):
    with Cleanup() as c:
        server = c.add(Proc(tp, ["--server", "127.0.0.1:0", "--json", "-n", str(EVENTS)],
                            name="server"))
        port = server.listening_port()
        client = c.add(Proc(tp, ["-s", "100", "-n", str(EVENTS), "--json",
                                 "127.0.0.1:%d" % port], name="client"))
        client.expect_exit(0)
        server.expect_exit(0)
        got = server.summary()
        check_eq(got["role"], "server", "server summary role")
        check_eq(got["transport"], "peering", "server summary transport")
        check_eq(got["events"], EVENTS, "events the server received")
        check(got["rate"] > 0, "server rate should be positive: %r" % got)
        sent = client.summary()
        check_eq(sent["events"], EVENTS, "events the client sent")
        check_eq(sent["dropped"], 0, "events the client's peer queue dropped")
        check_eq(sent["event_type"], 1, "client event type")
        # Every stdout line in --json mode is a JSON object.
        for proc in (server, client):
            for obj in proc.json_lines():
                check(isinstance(obj, dict) and "type" in obj,
                      "%s printed a non-JSON line\n%s" % (proc.name, proc.describe()))


def sigint_ends_both_with_a_summary(tp, node):
    with Cleanup() as c:
        server = c.add(Proc(tp, ["--server", "127.0.0.1:0"], name="server"))
        port = server.listening_port()
        client = c.add(Proc(tp, ["-s", "10", "127.0.0.1:%d" % port], name="client"))
        # One rate line on each side means events are flowing.
        server.wait_for(lambda l: l.startswith("rate: ") and l.endswith(" events/s"))
        client.wait_for(lambda l: l.startswith("rate: "))
        client.send_signal(signal.SIGINT)
        client.expect_exit(0)
        line = client.wait_for(lambda l: l.startswith("summary: "))
        sent = int(line.split("events=")[1].split()[0])
        check(sent > 0, "the client sent nothing: " + line)
        # The client shut down gracefully, so everything it sent reaches the server; a
        # second without events shows that it all arrived.
        server.wait_for(lambda l: l == "rate: 0 events/s", what="a quiet second")
        server.send_signal(signal.SIGTERM)
        server.expect_exit(0)
        line = server.wait_for(lambda l: l.startswith("summary: "))
        received = int(line.split("events=")[1].split()[0])
        check_eq(received, sent, "events received after SIGINT (%s)" % line)


run_tests([all_events_arrive, sigint_ends_both_with_a_summary], limit=150,
          binaries=("broker-throughput", "broker-node"))
