"""py.cli: `python -m brokerclient` subscribe / publish / event against a real node.

Two subscribers (plain JSON and --v1) wait for four messages; publish sends a plain
literal, a JSON v1 value and a bare address, and `event` a Zeek event; both subscribers
print one JSON line per message and exit 0. Bad values exit 2 with a message naming the
problem; an unreachable node exits 1.
"""

import json
import os
import sys

import harness  # noqa: F401  (the paths of brokertest and brokerclient)
from brokertest.checks import check, check_eq, run_tests
from brokertest.nodes import Node
from brokertest.procs import Cleanup, Proc, run_once
from brokertest.wsclient import in_thread

MODULE = ["-m", "brokerclient"]
ENV = {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
TIMEOUT = 30

PUBLISHED = [
    (["publish", "/c/a", "42"], {"topic": "/c/a", "value": 42},
     {"@data-type": "integer", "data": 42}),
    (["publish", "/c/b", '{"@data-type":"count","data":42}'], {"topic": "/c/b", "value": 42},
     {"@data-type": "count", "data": 42}),
    (["publish", "/c/c", "10.0.0.0/8"], {"topic": "/c/c", "value": "10.0.0.0/8"},
     {"@data-type": "subnet", "data": "10.0.0.0/8"}),
    (["event", "/c/e", "ping", '"hi"', "80/tcp", "1500ms"],
     {"topic": "/c/e", "value": {"event": "ping", "args": ["hi", "80/tcp", "1500ms"]}},
     None),
]


def cli(args):
    """Runs the command line to its end: (exit code, stdout, stderr)."""
    return run_once(sys.executable, MODULE + args, timeout=TIMEOUT, env=ENV)


async def start_subscriber(cleanup, url, extra, name):
    """A subscriber, once it reported that the node acknowledged its subscription."""
    proc = cleanup.add(Proc(sys.executable, MODULE + ["subscribe", url, "/c", "-n",
                                                      str(len(PUBLISHED))] + extra,
                            name, env=ENV))
    await in_thread(proc.wait_for, lambda l: "subscribed to" in l, TIMEOUT,
                    "the subscription", stderr=True)
    return proc


async def test_publish_subscribe(node_bin):
    """subscribers (plain and --v1) print what publish and event send, one JSON line each"""
    with Cleanup() as cleanup:
        node = cleanup.add(Node(node_bin, web_socket=True))
        url = node.url()
        plain = await start_subscriber(cleanup, url, [], "plain subscriber")
        typed = await start_subscriber(cleanup, url, ["--v1"], "--v1 subscriber")
        for args, _, _ in PUBLISHED:
            code, _, err = await in_thread(cli, [args[0], url] + args[1:])
            check_eq(code, 0, "exit status of %s (stderr: %s)" % (" ".join(args), err))
        for proc in (plain, typed):
            check_eq(await in_thread(proc.wait_exit, TIMEOUT), 0,
                     "exit status of the %s\n%s" % (proc.name, proc.describe()))
            lines = [json.loads(line) for line in proc.lines]
            check_eq(len(lines), len(PUBLISHED), "lines of the %s" % proc.name)
            if proc is plain:
                check_eq(lines, [shown for _, shown, _ in PUBLISHED], "plain output")
            else:
                for line, (_, _, v1) in zip(lines, PUBLISHED):
                    if v1 is not None:
                        check_eq(line["value"], v1, "--v1 output of %s" % line["topic"])
                event = lines[-1]["value"]
                check_eq(event["@data-type"], "vector", "--v1 event")
                check_eq(event["data"][2]["data"][1]["data"][1],
                         {"@data-type": "port", "data": "80/tcp"}, "--v1 event argument")


async def test_usage_errors(node_bin):
    """bad values and arguments exit 2 naming the problem; an unreachable node exits 1"""
    with Node(node_bin, web_socket=True) as node:
        url = node.url()
        for args, fragment in [
                (["publish", url, "/c", '{"@data-type":"count","data":-1}'], "count out of range"),
                (["publish", url, "<$>/x", "1"], "reserved"),
                (["publish", url, "/c", str(2**64)], "out of the integer range"),
                (["subscribe", url], "the following arguments are required"),
                (["publish", "http://127.0.0.1:1", "/c", "1"], "ws:// or wss://")]:
            code, _, err = await in_thread(cli, args)
            check_eq(code, 2, "exit status of %s" % args)
            check(fragment in err, "stderr of %s names the problem: %r" % (args, err))
    code, _, err = await in_thread(cli, ["publish", "ws://127.0.0.1:1", "/c", "1"])
    check_eq(code, 1, "exit status for an unreachable node")
    check("cannot connect" in err, "stderr: %r" % err)
    code, _, _ = await in_thread(cli, ["--help"])
    check_eq(code, 0, "exit status of --help")


run_tests([test_publish_subscribe, test_usage_errors], limit=100)
