#!/usr/bin/env python3
"""System test: what an operator uses beside the metrics: --json event lines, --status
tables, JSON log lines, Broker's BROKER_CONSOLE_VERBOSITY.

Usage: ops.py <path to broker-node>
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.checks import check, check_eq, run_tests  # noqa: E402
from brokertest.nodes import Node, is_status, peer_uri  # noqa: E402
from brokertest.procs import Cleanup, Proc, run_once  # noqa: E402

WAIT = 15.0


def json_lines(proc):
    result = []
    for line in proc.lines:
        obj = json.loads(line)  # Every line must be one JSON object.
        check(isinstance(obj, dict) and "type" in obj, "an event object: %r" % line)
        result.append(obj)
    return result


def test_json_event_lines(binary):
    """--json prints every event line as one JSON object naming the event"""
    with Cleanup() as cleanup:
        a = cleanup.add(Node(binary, ["-t", "/t", "-v", "--json"], "A"))
        check_eq(json_lines(a)[0], {"type": "listening", "port": a.port}, "the first line")
        b = cleanup.add(Node(binary, ["-t", "/t", "-v", "--peers", peer_uri(a.port)], "B"))
        b.wait_for(is_status("peer_added"), what="B's peering")
        a.wait_for(lambda l: '"code":"peer_added"' in l, WAIT, "A's peer_added event")
        added = [e for e in json_lines(a) if e.get("code") == "peer_added"][0]
        check_eq(added["type"], "status", "the type of a status line")
        check(added["address"].startswith("127.0.0.1:"), "the peer's address: %r" % added)
        check_eq(len(added["peer"]), 36, "the peer's id")
        b.stop()
        a.wait_for(lambda l: '"code":"peer_lost"' in l or '"code":"peer_removed"' in l, WAIT,
                   "A's event for B's end")
        json_lines(a)


def test_status_tables(binary):
    """--status URL prints the node, its peers and local handlers as tables"""
    with Cleanup() as cleanup:
        a = cleanup.add(Node(binary, ["-t", "/t", "-v"], "A", metrics=True))
        b = cleanup.add(Node(binary, ["-t", "/b/", "-v", "--peers", peer_uri(a.port)], "B"))
        line = a.wait_for(is_status("peer_added"), what="A's peer_added")
        b_id = line.split()[2]
        url = "http://127.0.0.1:%d" % a.metrics_port
        code, out, err = run_once(binary, ["--status", url])
        check_eq(code, 0, "exit code of --status (stderr %r)" % err)
        check(out.startswith("node "), "the first line names the node: %r" % out[:200])
        check("\npeers (1)\n" in out, "one peer: %r" % out)
        check(b_id in out and "/b/" in out and "inbound" in out,
              "B's row with its subscription and direction: %r" % out)
        check("\nlocal (" in out and "hub" in out, "local handlers: %r" % out)
        check("\nrecent events (" in out and "peered with " + b_id in out,
              "the peering among the recent events: %r" % out)
        check("turned away 0, rejected messages 0, ping timeouts 0" in out,
              "the WebSocket rejections line: %r" % out)
        row = [r for r in out.splitlines() if b_id in r and "inbound" in r][0]
        check(" 127.0.0.1 " in row, "an inbound peer's address, without its source port: %r"
              % row)
        code, out, err = run_once(binary, ["--status", url, "--json"])
        check_eq(code, 0, "exit code of --status --json")
        check_eq(json.loads(out)["peers"]["items"][0]["id"], b_id, "the document's peer")
        code, out, err = run_once(binary, ["--status", "not a url"])
        check_eq(code, 1, "a malformed URL")
        check("expected http://host:port" in err, "the error names the form: %r" % err)


def test_log_format_and_verbosity(binary):
    """log lines are JSON with broker.log-format=json; BROKER_CONSOLE_VERBOSITY=quiet
    silences them"""
    with Cleanup() as cleanup:
        a = cleanup.add(Node(binary, ["--broker.log-format=json"], "A",
                             env={"BROKER_METRICS_ENDPOINT_NAME": "node-a"}))
        a.wait_for(lambda l: '"listening on' in l, WAIT, "a JSON log line", stderr=True)
        logs = [json.loads(l) for l in a.err_lines if l.startswith("{")]
        check(logs, "JSON log lines: %r" % a.err_lines)
        for obj in logs:
            check(set(obj) >= {"time", "level", "component", "message"}, "fields of %r" % obj)
            check_eq(obj["endpoint"], "node-a", "the endpoint's name in the log line")
        quiet = cleanup.add(Node(binary, [], "Q", env={"BROKER_CONSOLE_VERBOSITY": "quiet"}))
        quiet.stop()
        check_eq([l for l in quiet.err_lines if " info " in l or " warning " in l], [],
                 "log lines at verbosity quiet")
        code, out, err = run_once(binary, ["--no-listen"],
                                  env={"BROKER_CONSOLE_VERBOSITY": "chatty"})
        check_eq(code, 1, "exit code for a bad BROKER_CONSOLE_VERBOSITY")
        check("BROKER_CONSOLE_VERBOSITY" in err, "the error names the variable: %r" % err)


run_tests([test_json_event_lines, test_status_tables, test_log_format_and_verbosity],
          limit=90)
