#!/usr/bin/env python3
"""System test: the store options of broker-node and broker-store's command line.

Usage: cli.py <broker-node> <broker-store>
"""

import os
import shutil
import signal
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.checks import check, run_tests  # noqa: E402
from brokertest.net import addr, free_port  # noqa: E402
from brokertest.nodes import Node  # noqa: E402
from brokertest.procs import Cleanup, run_once  # noqa: E402
from brokertest.store import STORE_FLAGS, run_tool, typed  # noqa: E402

EXIT_INVALID_CONFIG = 1
TOOL_BAD_USAGE, TOOL_NO_STORE, TOOL_OP_FAILED = 1, 2, 3
PLAIN = ["--broker.disable-ssl"]


def test_node_help(node_bin, tool_bin):
    """broker-node --help lists the store options"""
    code, out, _ = run_once(node_bin, ["--help"])
    check(code == 0, "--help exits 0")
    for text in ("--master-stores", "--clone-stores", "--store-backend", "--store-dir"):
        check(text in out, "--help lists %s" % text)


def test_node_invalid_store_options(node_bin, tool_bin):
    """bad store options exit 1 with a message naming the option"""
    cases = [
        (["--store-backend", "rocksdb", "--master-stores", "a"], "store-backend"),
        (["--master-stores", "<$>/x"], "master-stores"),
        (["--master-stores", "a,a"], "master-stores"),
        (["--clone-stores", "b,b"], "clone-stores"),
        (["--master-stores", "a", "--clone-stores", "a"], "clone-stores"),
        (["--master-stores", "a/b", "--store-backend", "sqlite"], "master-stores"),
        (["--master-stores", "a", "--store-backend", "sqlite", "--store-dir="], "store-dir"),
    ]
    for args, name in cases:
        code, _, err = run_once(node_bin, args + PLAIN)
        check(code == EXIT_INVALID_CONFIG, "%s exits 1, got %d: %s" % (args, code, err))
        check(name in err, "the error for %s names %s: %s" % (args, name, err))


def test_node_unusable_store_dir(node_bin, tool_bin):
    """a store directory that cannot hold the database exits 1 with a clear error"""
    tmp = tempfile.mkdtemp(prefix="broker-store-cli-")
    try:
        in_the_way = os.path.join(tmp, "file")
        with open(in_the_way, "w") as f:
            f.write("not a directory")
        dirs = [in_the_way, os.path.join(in_the_way, "below")]
        if os.geteuid() != 0:  # Permissions do not stop root.
            locked = os.path.join(tmp, "locked")
            os.mkdir(locked, 0o500)
            dirs.append(locked)
        for d in dirs:
            code, out, err = run_once(node_bin, ["--master-stores", "users", "--store-backend",
                                                 "sqlite", "--store-dir", d] + PLAIN)
            check(code == EXIT_INVALID_CONFIG, "--store-dir %s exits 1, got %d: %s"
                  % (d, code, err))
            check("master-stores" in err and "users" in err and "cannot_open_file" in err,
                  "the error names the option, the store and the cause: %s" % err)
            check("store master" not in out, "no store line: %s" % out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_node_config_file(node_bin, tool_bin):
    """the store options work in a config file; SQLite files go to <store-dir>/<name>.db"""
    tmp = tempfile.mkdtemp(prefix="broker-store-cli-")
    try:
        cfg = os.path.join(tmp, "node.cfg")
        with open(cfg, "w") as f:
            f.write('master-stores = ["users", "hosts"]\nclone-stores = ["other"]\n'
                    'store-backend = "sqlite"\nstore-dir = "%s"\n' % os.path.join(tmp, "db"))
        with Cleanup() as cleanup:
            n = cleanup.add(Node(node_bin, ["--config-file=" + cfg], "N"))
            for line in ("store master users", "store master hosts", "store clone other"):
                n.wait_for(lambda l, line=line: l == line, what=line)
            for name in ("users", "hosts"):
                path = os.path.join(tmp, "db", name + ".db")
                check(os.path.exists(path), "%s exists" % path)
            n.send_signal(signal.SIGTERM)
            check(n.wait_exit() == 0, "the node ends cleanly")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_tool_usage(node_bin, tool_bin):
    """broker-store: --help, and bad usage exits 1 before connecting"""
    code, results, err = run_tool(tool_bin, ["--help"])
    check(code == 0, "--help exits 0: %s" % err)
    cases = [
        ([], "STORE"),
        (["--peer", "nowhere", "s", "keys"], "peer"),
        (["--peer", "127.0.0.1:0", "s", "keys"], "peer"),
        (["--no-such-option", "s"], "no-such-option"),
        (["s", "frobnicate"], "frobnicate"),
        (["s", "put", "k"], "put"),
        (["s", "put", "k", "[1,"], "put"),
        (["s", "get", "k", ";", "get"], "get"),
        (["--", "<$>/x", "keys"], "<$>/x"),
    ]
    for args, name in cases:
        code, results, err = run_tool(tool_bin, args + PLAIN)
        check(code == TOOL_BAD_USAGE, "%s exits 1, got %d: %s" % (args, code, err))
        check(name in err and not results, "the error for %s names %s: %s" % (args, name, err))


def test_tool_cannot_reach_store(node_bin, tool_bin):
    """broker-store exits 2 when it cannot peer or no master answers"""
    # The tool's own line gives the reason, not just "cannot peer" (doc/peering.md, "When
    # a peering fails").
    port = free_port()
    code, _, err = run_tool(tool_bin, ["--peer", addr(port), "s", "keys"] + PLAIN)
    own = [l for l in err.splitlines() if l.startswith("broker-store: ")]
    check(code == TOOL_NO_STORE and own and addr(port) in own[-1]
          and "Connection refused" in own[-1], "unreachable peer: %d %s" % (code, err))
    with Cleanup() as cleanup:
        tls = cleanup.add(Node(node_bin, ["--master-stores", "s"], "tls", plain=False))
        code, _, err = run_tool(tool_bin, ["--peer", addr(tls.port), "s", "keys"] + PLAIN)
        own = [l for l in err.splitlines() if l.startswith("broker-store: ")]
        check(code == TOOL_NO_STORE and own and "broker.disable-ssl=true" in own[-1]
              and "expect TLS" in own[-1], "a plain tool at a TLS node: %d %s" % (code, err))
    with Cleanup() as cleanup:
        a = cleanup.add(Node(node_bin, ["--master-stores", "s"] + STORE_FLAGS, "A"))
        code, _, err = run_tool(tool_bin, ["--peer", addr(a.port), "--ready-timeout=1",
                                           "other", "keys"] + PLAIN)
        check(code == TOOL_NO_STORE and "no snapshot" in err,
              "a store without master: %d %s" % (code, err))
        # Operations on the command line, separated by ';': exit 0, or 3 after a failure.
        base = ["--peer", addr(a.port)] + STORE_FLAGS + PLAIN + ["--", "s"]
        code, results, err = run_tool(tool_bin, base + ["put", "k", "-1", ";", "put", "j",
                                                        "2", ";", "wait-get", "k", "-1", "5s"])
        check(code == 0 and [r.get("ok") for r in results] == [True] * 3,
              "three operations succeed: %d %s %s" % (code, results, err))
        code, results, err = run_tool(tool_bin, base + ["get", "k", ";", "get", "nope"])
        check(code == TOOL_OP_FAILED, "exit 3 after a failed operation: %d" % code)
        check(results[0].get("value") == typed("integer", -1)
              and results[1].get("error") == "no_such_key", "results: %s" % results)


if __name__ == "__main__":
    run_tests([test_node_help, test_node_invalid_store_options, test_node_unusable_store_dir,
               test_node_config_file, test_tool_usage, test_tool_cannot_reach_store], limit=40,
              binaries=("broker-node", "broker-store"))
