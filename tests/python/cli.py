"""py.cli: `python -m brokerclient` subscribe / publish / event against a real node.

Two subscribers (plain JSON and --v1) wait for four messages; publish sends a plain
literal, a JSON v1 value and a bare address, and `event` a Zeek event; both subscribers
print one JSON line per message and exit 0. Bad values exit 2 with a message naming the
problem; an unreachable node exits 1.
"""

import json
import os
import subprocess
import sys

from harness import Node, TestFailure, blocking, check, check_eq, run

COMMAND = [sys.executable, "-m", "brokerclient"]
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
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


def cli(args, **kwargs):
    return subprocess.run(COMMAND + args, env=ENV, capture_output=True, text=True,
                          timeout=TIMEOUT, **kwargs)


def start_subscriber(url, extra):
    proc = subprocess.Popen(COMMAND + ["subscribe", url, "/c", "-n", str(len(PUBLISHED))]
                            + extra, env=ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    seen = []
    for _ in range(20):  # printed once the node acknowledged the subscription
        line = proc.stderr.readline()
        seen.append(line)
        if "subscribed to" in line:
            return proc
        if not line:
            break
    proc.kill()
    raise TestFailure("the subscriber did not report its subscription: %s" % "".join(seen))


async def main(binary):
    with Node(binary) as node:
        url = node.url()
        plain = await blocking(start_subscriber, url, [])
        typed = await blocking(start_subscriber, url, ["--v1"])
        try:
            for args, _, _ in PUBLISHED:
                result = await blocking(cli, [args[0], url] + args[1:])
                check_eq(result.returncode, 0, "exit status of %s (stderr: %s)"
                         % (" ".join(args), result.stderr))
            for proc, what in [(plain, "plain"), (typed, "--v1")]:
                out, err = await blocking(proc.communicate, timeout=TIMEOUT)
                check_eq(proc.returncode, 0, "exit status of the %s subscriber (stderr: %s)"
                         % (what, err))
                lines = [json.loads(line) for line in out.splitlines()]
                check_eq(len(lines), len(PUBLISHED), "lines of the %s subscriber" % what)
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
        finally:
            for proc in (plain, typed):
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()

        for args, fragment in [
                (["publish", url, "/c", '{"@data-type":"count","data":-1}'], "count out of range"),
                (["publish", url, "<$>/x", "1"], "reserved"),
                (["publish", url, "/c", str(2**64)], "out of the integer range"),
                (["subscribe", url], "the following arguments are required"),
                (["publish", "http://127.0.0.1:1", "/c", "1"], "ws:// or wss://")]:
            result = await blocking(cli, args)
            check_eq(result.returncode, 2, "exit status of %s" % args)
            check(fragment in result.stderr, "stderr of %s names the problem: %r"
                  % (args, result.stderr))
        result = await blocking(cli, ["publish", "ws://127.0.0.1:1", "/c", "1"])
        check_eq(result.returncode, 1, "exit status for an unreachable node")
        check("cannot connect" in result.stderr, "stderr: %r" % result.stderr)
        result = await blocking(cli, ["--help"])
        check_eq(result.returncode, 0, "exit status of --help")


run(main, limit=120)
