#!/usr/bin/env python3
"""System test: every store operation's error cases, through broker-store.

Usage: errors.py <broker-node> <broker-store>
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.checks import check, run_tests  # noqa: E402
from brokertest.net import addr, wait_metric  # noqa: E402
from brokertest.nodes import Node, peer_uri  # noqa: E402
from brokertest.procs import Cleanup  # noqa: E402
from brokertest.store import STORE_FLAGS, Tool, run_tool, typed  # noqa: E402

STORE = "errs"
# A clone alone gives up on a put_unique after this (STORE_FLAGS: 3 s).
SHORT_REQUESTS = ["--broker.store.request-timeout=500"]


def expect_errors(tool, cases):
    for line, code in cases:
        got = tool.error(line)
        check(got == code, "%r fails with %s, got %s" % (line, code, got))


def test_master_operations(node_bin, tool_bin):
    """each operation's own errors, reported by the master: no_such_key, type_clash, ..."""
    with Cleanup() as cleanup:
        m = cleanup.add(Tool(tool_bin, STORE, ["--master"], "master"))
        for line in ("put s \"text\"", "put n 1", "put v [1, 2]", "put c 5c",
                     "insert_into st x", "insert_into tb k v"):
            m.ok(line)
        expect_errors(m, [
            ("get missing", "no_such_key"),
            ("get_index_from_value missing 0c", "no_such_key"),
            ("get_index_from_value v 5c", "no_such_key"),
            ("get_index_from_value tb other", "no_such_key"),
            ("get_index_from_value n 0c", "type_clash"),
            ("get_index_from_value v x", "type_clash"),
            ("increment s 1", "type_clash"),
            ("increment c 1", "type_clash"),
            ("decrement missing 1", "no_such_key"),
            ("decrement s 1", "type_clash"),
            ("append n x", "type_clash"),
            ("insert_into n x", "type_clash"),
            ("insert_into s k v", "type_clash"),
            ("remove_from missing x", "no_such_key"),
            ("remove_from s x", "type_clash"),
            ("push s 1", "type_clash"),
            ("pop missing", "no_such_key"),
            ("pop s", "type_clash"),
            ("wait-size 99 200ms", "request_timeout"),
            ("wait-get s other 200ms", "request_timeout"),
        ])
        # Not errors: a missing key does not exist, erasing it is fine, a taken key stays.
        check(m.value("exists missing") == typed("boolean", False), "exists of a missing key")
        m.ok("erase missing")
        check(m.value("put_unique s x") == typed("boolean", False), "put_unique of a taken key")
        # A failed write changes nothing.
        check(m.value("get s") == typed("string", "text"), "s is unchanged")
        check(m.value("get n") == typed("integer", 1), "n is unchanged")
        check(m.value("get c") == typed("count", 5), "c is unchanged")
        check(m.close() == 3, "exit code 3 after failed operations")


def test_bad_input(node_bin, tool_bin):
    """malformed operations are errors naming what is wrong; the session goes on"""
    with Cleanup() as cleanup:
        m = cleanup.add(Tool(tool_bin, STORE, ["--master"], "master"))
        expect_errors(m, [
            ("frobnicate k", "invalid_message"),
            ("put k", "invalid_message"),
            ("get", "invalid_message"),
            ("keys extra", "invalid_message"),
            ("put k 1 10q", "invalid_message"),
            ("put k 1 10s extra", "invalid_message"),
            ("wait-size many 1s", "invalid_message"),
            ("wait-get k 1", "invalid_message"),
            ("put k [1, 2", "invalid_message"),
            ("put k \"open", "invalid_message"),
            ("put k 1.5.3", "invalid_data"),  # Starts like a number, is none.
            ("put k {bad}", "invalid_json"),

            ("put k 1e400", "invalid_data"),
            ("put k 99999999999999999999", "invalid_data"),
            ("put k 18446744073709551616c", "invalid_data"),
            ("put k {\"@data-type\": \"count\", \"data\": -1}", "invalid_data"),
            ("put k " + "[" * 100 + "]" * 100, "invalid_data"),
        ])
        m.ok("put k 1")
        check(m.value("get k") == typed("integer", 1), "the session goes on")
        # The shared literal syntax (doc/literals.md): text forms and plain JSON objects.
        for word, want in (("10.0.0.1", typed("address", "10.0.0.1")),
                           ("80/tcp", typed("port", "80/tcp")),
                           ('{"a": 1}', typed("table", [{"key": typed("string", "a"),
                                                         "value": typed("integer", 1)}]))):
            m.ok("put lit " + word)
            check(m.value("get lit") == want, "%s reads as %s" % (word, want))
        r = m.op("put k " + "x" * 100000)
        check(r.get("ok") is True, "a long value is fine: %s" % str(r)[:100])


def test_clone_without_master(node_bin, tool_bin):
    """a clone with no master: stale_data for reads, no_such_master for put_unique and for
    the verdict of a write"""
    code, results, err = run_tool(tool_bin, ["--ready-timeout=0", "--broker.disable-ssl"]
                                  + STORE_FLAGS + SHORT_REQUESTS + [
        "--", STORE, "get", "k", ";", "exists", "k", ";", "keys", ";",
        "get_index_from_value", "k", "0c", ";", "put_unique", "k", "1", ";",
        "put", "k", "1", ";", "wait-size", "1", "200ms"])
    want = ["stale_data", "stale_data", "stale_data", "stale_data", "no_such_master",
            "no_such_master", "request_timeout"]
    got = [r.get("error") for r in results]
    check(got == want, "errors %s, got %s (%s)" % (want, results, err))
    check(code == 3, "exit code 3, got %d" % code)


def test_errors_through_a_clone(node_bin, tool_bin):
    """a write the master rejects is the write's error through a clone too: logged and
    counted on the master's node, and an error event there"""
    with Cleanup() as cleanup:
        a = cleanup.add(Node(node_bin, ["--master-stores", STORE, "-v"] + STORE_FLAGS, "A",
                             metrics=True))
        w = cleanup.add(Tool(tool_bin, STORE, ["--peer", addr(a.port)], "writer"))
        check(w.ok("put s \"text\"") == {"op": "put", "ok": True}, "an applied write")
        check(w.error("increment s 1") == "type_clash", "increment of a string")
        check(w.error("decrement missing 1") == "no_such_key", "decrement of a missing key")
        # The master says so in its log (not only with -v) and in its metrics.
        a.wait_for(lambda l: "store " + STORE + ": add of key" in l
                   and "rejected write 1" in l, what="the logged rejection", stderr=True)
        a.wait_for(lambda l: l.startswith("error type_clash store " + STORE + ": add of key"),
                   what="the type_clash event")
        a.wait_for(lambda l: l.startswith("error no_such_key store " + STORE + ":"),
                   what="the no_such_key event")
        wait_metric(a.metrics_port, 'broker_store_rejected_writes_total{name="%s"}' % STORE,
                    lambda v: v == 2)
        w.ok("wait-get s text 10s")
        # A rejection is reported once; the writes after it are judged on their own.
        w.ok("put n 1")
        # Fire and forget: ok as soon as the clone handed the write on.
        code, results, err = run_tool(tool_bin, ["--peer", addr(a.port), "--fire-and-forget",
                                                 "--broker.disable-ssl"] + STORE_FLAGS
                                      + ["--", STORE, "increment", "s", "1"])
        check(code == 0 and results == [{"op": "increment", "ok": True,
                                         "verdict": "forwarded"}],
              "--fire-and-forget: %d %s %s" % (code, results, err))
        wait_metric(a.metrics_port, 'broker_store_rejected_writes_total{name="%s"}' % STORE,
                    lambda v: v == 3)


def test_read_your_writes_through_a_clone(node_bin, tool_bin):
    """doc/broker-store.md's stdin example: a read right after a write through a clone
    sees it, every time"""
    with Cleanup() as cleanup:
        a = cleanup.add(Node(node_bin, ["--master-stores", "users"] + STORE_FLAGS, "A"))
        for i in range(1, 4):
            code, results, err = run_tool(tool_bin, ["--peer", addr(a.port),
                                                     "--broker.disable-ssl"] + STORE_FLAGS
                                          + ["users"], "increment hits 1c\nget hits\n")
            check(code == 0 and results == [{"op": "increment", "ok": True},
                                            {"op": "get", "value": typed("count", i)}],
                  "run %d: %d %s %s" % (i, code, results, err))
        # The command-line form of the brief: put, then an increment the master rejects.
        code, results, err = run_tool(tool_bin, ["--peer", addr(a.port), "--broker.disable-ssl"]
                                      + STORE_FLAGS + ["users", "put", "name", '"bob"', ";",
                                                       "increment", "name", "1"])
        check(code == 3 and results[0] == {"op": "put", "ok": True}
              and results[1].get("error") == "type_clash",
              "a rejected increment exits 3: %d %s %s" % (code, results, err))


def test_master_exists(node_bin, tool_bin):
    """a second master on another node fails with master_exists"""
    with Cleanup() as cleanup:
        a = cleanup.add(Node(node_bin, ["--master-stores", STORE] + STORE_FLAGS, "A"))
        a.wait_for(lambda l: l == "store master " + STORE, what="the master")
        code, results, err = run_tool(tool_bin, ["--master", "--peer", addr(a.port),
                                                 "--broker.disable-ssl", STORE, "keys"])
        check(code == 2 and "master_exists" in err and not results,
              "broker-store --master exits 2 with master_exists: %d %s" % (code, err))
        b = cleanup.add(Node(node_bin, ["--master-stores", STORE, "--peers",
                                        peer_uri(a.port), "--no-listen"], "B",
                             listen=False))
        code = b.wait_exit()
        err = "\n".join(b.err_lines)
        check(code == 1, "broker-node exits 1, got %s: %s" % (code, err))
        check("master-stores" in err and "master_exists" in err,
              "the error names the option and the code: %s" % err)


if __name__ == "__main__":
    run_tests([test_master_operations, test_bad_input, test_clone_without_master,
               test_errors_through_a_clone, test_read_your_writes_through_a_clone,
               test_master_exists], limit=40,
              binaries=("broker-node", "broker-store"))
