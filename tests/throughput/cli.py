"""The command line: --help, bad usage exits 1 with an error naming the option or
argument, and a node that cannot be reached exits 2 after --connect-timeout."""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.checks import check, check_eq, run_tests  # noqa: E402
from brokertest.net import free_port  # noqa: E402
from brokertest.procs import Cleanup, Proc  # noqa: E402

# (arguments, text the error must contain)
BAD_USAGE = [
    (["-t", "4", "127.0.0.1"], "event-type"),
    (["--event-type=x", "127.0.0.1"], "event-type"),
    (["-s", "0", "127.0.0.1"], "batch-size"),
    (["--batch-rate=-1", "127.0.0.1"], "batch-rate"),
    (["-n", "many", "127.0.0.1"], "count"),
    (["--duration=1s", "127.0.0.1"], "duration"),
    (["--connect-timeout=0", "127.0.0.1"], "connect-timeout"),
    (["--no-such-option", "127.0.0.1"], "--no-such-option"),
    (["-r"], '"-r"'),
    ([], "<host>[:<port>]"),
    (["--server"], "<addr>:<port>"),
    (["127.0.0.1", "extra"], '"extra"'),
    (["127.0.0.1:70000"], "127.0.0.1:70000"),
    (["127.0.0.1:0"], "port 0"),
    (["--latency", "127.0.0.1"], "batch-rate"),
    (["--latency", "-r", "10", "-s", "5", "127.0.0.1"], "batch-size"),
    (["--latency", "--web-socket", "-r", "10", "127.0.0.1"], "latency"),
    (["--server", "--web-socket", ":9997"], "host"),
    (["--broker.ttl=0", "127.0.0.1"], "broker.ttl"),
]

OPTIONS_IN_HELP = ["--server", "--event-type", "--batch-rate", "--batch-size", "--count",
                   "--duration", "--connect-timeout", "--web-socket", "--latency", "--json",
                   "--verbose", "-t,", "-r,", "-s,", "-n,", "-v,"]


def help_lists_every_option(tp, node):
    with Cleanup() as c:
        p = c.add(Proc(tp, ["--help"], name="help"))
        p.expect_exit(0)
        text = "\n".join(p.lines)
        check(text.startswith("Usage: broker-throughput"), "help starts with a usage line")
        check("0: 64-byte string" in text, "--help describes event type 0\n%s" % text)
        for option in OPTIONS_IN_HELP:
            check(option in text, "--help does not mention %s\n%s" % (option, text))


def bad_usage_names_the_culprit(tp, node):
    with Cleanup() as c:
        for args, culprit in BAD_USAGE:
            p = c.add(Proc(tp, args, name="broker-throughput " + " ".join(args)))
            p.expect_exit(1)
            err = "\n".join(p.err_lines)
            check(culprit in err, "%s: the error does not name %r:\n%s"
                  % (p.name, culprit, err))
            check_eq(p.lines, [], "%s: stdout" % p.name)


def unreachable_node_times_out(tp, node):
    with Cleanup() as c:
        port = free_port()  # Nobody listens here.
        for extra in ([], ["--web-socket"]):
            start = time.monotonic()
            p = c.add(Proc(tp, extra + ["--connect-timeout", "1", "127.0.0.1:%d" % port],
                           name="unreachable " + " ".join(extra)))
            p.expect_exit(2, timeout=30)
            check(time.monotonic() - start >= 1.0, "%s gave up before --connect-timeout"
                  % p.name)
            check(any("127.0.0.1:%d" % port in l for l in p.err_lines),
                  "%s: the error does not name the address\n%s" % (p.name, p.describe()))


run_tests([help_lists_every_option, bad_usage_names_the_culprit, unreachable_node_times_out],
          limit=150, binaries=("broker-throughput", "broker-node"))
