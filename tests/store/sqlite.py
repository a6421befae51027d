#!/usr/bin/env python3
"""System test: a SQLite master keeps its data and expiries across a restart of its node.

Usage: sqlite.py <broker-node> <broker-store>
"""

import os
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.checks import check, run_tests  # noqa: E402
from brokertest.net import addr  # noqa: E402
from brokertest.nodes import Node  # noqa: E402
from brokertest.procs import Cleanup  # noqa: E402
from brokertest.store import STORE_FLAGS, Tool, typed  # noqa: E402

STORE = "persist"
KEYS = 200
EXPIRY_SECONDS = 6  # Long enough to outlive the restart, short enough for the suite.


def start_master(node_bin, cleanup, store_dir, name):
    node = cleanup.add(Node(node_bin, ["--master-stores", STORE, "--store-backend", "sqlite",
                                       "--store-dir", store_dir] + STORE_FLAGS, name))
    node.wait_for(lambda l: l == "store master " + STORE, what="the master")
    return node


def test_restart_keeps_data_and_expiries(node_bin, tool_bin):
    """data and expiries of a SQLite master survive a restart; an expiry fires after it"""
    store_dir = tempfile.mkdtemp(prefix="broker-store-sqlite-")
    try:
        with Cleanup() as cleanup:
            a1 = start_master(node_bin, cleanup, store_dir, "A1")
            w = cleanup.add(Tool(tool_bin, STORE, ["--peer", addr(a1.port)], "writer"))
            w.send(["put k%d %d" % (i, i) for i in range(KEYS)])
            w.send(["increment hits 3c", "push log \"a\"", "insert_into tags x",
                    "put later \"kept\" 1h"])
            put_at = time.monotonic()
            w.ok("put soon \"gone\" %ds" % EXPIRY_SECONDS)
            # The writer's clone sees the master's effects: the master applied them all.
            w.ok("wait-size %d 15s" % (KEYS + 5))
            before = w.state()
            check(w.close() == 0, "the writer exits 0")
            check(os.path.exists(os.path.join(store_dir, STORE + ".db")),
                  "the database is <store-dir>/<name>.db")
            a1.send_signal(signal.SIGTERM)
            check(a1.wait_exit() == 0, "A1 ends cleanly")

            a2 = start_master(node_bin, cleanup, store_dir, "A2")
            r = cleanup.add(Tool(tool_bin, STORE, ["--peer", addr(a2.port)], "reader"))
            after = r.state()
            if time.monotonic() - put_at < EXPIRY_SECONDS - 1:
                check(after == before, "the restarted master holds what it held: %d of %d "
                      "keys" % (len(after), len(before)))
            check(after.get("hits") == typed("count", 3), "hits is 3: %s" % after.get("hits"))
            # The expiry set before the restart fires after it, and only for its key.
            r.ok("wait-size %d %ds" % (KEYS + 4, EXPIRY_SECONDS + 10))
            check(r.error("get soon") == "no_such_key", "soon expired")
            check(time.monotonic() - put_at >= EXPIRY_SECONDS - 0.5,
                  "soon did not expire before its time")
            check(r.value("get later") == typed("string", "kept"), "later is kept")
            check(r.value("get k%d" % (KEYS - 1)) == typed("integer", KEYS - 1),
                  "the last key is there")
    finally:
        shutil.rmtree(store_dir, ignore_errors=True)


if __name__ == "__main__":
    run_tests([test_restart_keeps_data_and_expiries], limit=40,
              binaries=("broker-node", "broker-store"))
