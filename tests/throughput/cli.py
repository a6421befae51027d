"""The command line: --help, bad usage exits 1 with an error naming the option or
argument, and a node that cannot be reached exits 2 after --connect-timeout."""

import time

from tp_util import Cleanup, Proc, check, check_eq, expect_exit, free_port, run

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


def help_lists_every_option(tp):
    with Cleanup() as c:
        p = c.add(Proc(tp, ["--help"], name="help"))
        expect_exit(p, 0)
        text = "\n".join(p.lines)
        check(text.startswith("Usage: broker-throughput"), "help starts with a usage line")
        check("0: 64-byte string" in text, "--help describes event type 0\n%s" % text)
        for option in OPTIONS_IN_HELP:
            check(option in text, "--help does not mention %s\n%s" % (option, text))


def bad_usage_names_the_culprit(tp):
    with Cleanup() as c:
        for args, culprit in BAD_USAGE:
            p = c.add(Proc(tp, args, name="broker-throughput " + " ".join(args)))
            expect_exit(p, 1)
            err = "\n".join(p.err_lines)
            check(culprit in err, "%s: the error does not name %r:\n%s"
                  % (p.name, culprit, err))
            check_eq(p.lines, [], "%s: stdout" % p.name)


def unreachable_node_times_out(tp):
    with Cleanup() as c:
        port = free_port()  # Nobody listens here.
        for extra in ([], ["--web-socket"]):
            start = time.monotonic()
            p = c.add(Proc(tp, extra + ["--connect-timeout", "1", "127.0.0.1:%d" % port],
                           name="unreachable " + " ".join(extra)))
            expect_exit(p, 2, timeout=30)
            check(time.monotonic() - start >= 1.0, "%s gave up before --connect-timeout"
                  % p.name)
            check(any("127.0.0.1:%d" % port in l for l in p.err_lines),
                  "%s: the error does not name the address\n%s" % (p.name, p.describe()))


def main(tp, node):
    help_lists_every_option(tp)
    bad_usage_names_the_culprit(tp)
    unreachable_node_times_out(tp)


run(main)
