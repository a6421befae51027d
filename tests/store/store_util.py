"""Helpers of the data-store system tests: broker-store sessions and the test runner.

    with Cleanup() as cleanup:
        a = cleanup.add(Node(node_bin, ["--master-stores", "s"] + STORE_FLAGS, "A"))
        c = cleanup.add(Tool(tool_bin, "s", ["--peer", addr(a.port)], "C"))
        c.op("put k 1")                     # -> {"op": "put", "ok": True}
        c.op("get k")["value"]              # -> {"@data-type": "integer", "data": 1}

A Tool is one broker-store process reading operations from a pipe; every wait is bounded and
Cleanup (tests/lib/node_process.py) kills whatever it holds.
"""

import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from node_process import (Cleanup, Node, TestFailure, check, free_port,  # noqa: E402,F401
                          is_status)

# Short store timers, so that a lost peer counts as gone after 1 s (10 x 100 ms) and a
# request gives up after 3 s. Every process of a test gets the same ones.
STORE_FLAGS = ["--broker.store.heartbeat-interval=100", "--broker.store.request-timeout=3000"]

OP_TIMEOUT = 20.0
EXIT_TIMEOUT = 15.0
RUN_TIMEOUT = 30.0


def addr(port):
    return "127.0.0.1:%d" % port


def typed(kind, value):
    """Broker's typed JSON form, as broker-store prints values."""
    return {"@data-type": kind, "data": value}


class Tool:
    """One broker-store process fed through stdin; results are its stdout JSON lines."""

    def __init__(self, binary, store, args, name="tool", listen=False):
        self.name = name
        self.args = list(args) + ["--broker.disable-ssl"] + STORE_FLAGS
        if listen:
            self.args += ["--listen", "--listen-address=127.0.0.1"]
        self.args += ["--", store]
        self.results = []
        self.err_lines = []
        self.cond = threading.Condition()
        self.sent = 0
        self.proc = subprocess.Popen([binary] + self.args, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.readers = [threading.Thread(target=self._read_out, daemon=True),
                        threading.Thread(target=self._read_err, daemon=True)]
        for t in self.readers:
            t.start()
        self.port = None
        if listen:
            first = self._wait(lambda: len(self.results) >= 1, OP_TIMEOUT, "the listening line")
            check("listening" in first[0], "%s: first line is {\"listening\": N}: %s"
                  % (name, first[0]))
            self.port = self.results.pop(0)["listening"]

    def _read_out(self):
        for raw in self.proc.stdout:
            line = raw.decode(errors="replace").rstrip("\n")
            try:
                value = json.loads(line)
            except ValueError:
                value = {"unparsable": line}
            with self.cond:
                self.results.append(value)
                self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def _read_err(self):
        for raw in self.proc.stderr:
            with self.cond:
                self.err_lines.append(raw.decode(errors="replace").rstrip("\n"))
        with self.cond:
            self.cond.notify_all()

    def _wait(self, pred, timeout, what):
        deadline = time.monotonic() + timeout
        with self.cond:
            while not pred():
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None
                                 and not self.readers[0].is_alive()):
                    raise TestFailure("%s: timed out waiting for %s\n%s"
                                      % (self.name, what, self.describe()))
                self.cond.wait(min(left, 0.2))
            return list(self.results)

    def send(self, lines):
        """Writes operations without waiting for their results."""
        if isinstance(lines, str):
            lines = [lines]
        data = "".join(l + "\n" for l in lines).encode()
        self.sent += len(lines)
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def wait_results(self, count, timeout=OP_TIMEOUT):
        """Waits until `count` results arrived in total; returns all of them."""
        return self._wait(lambda: len(self.results) >= count, timeout,
                          "%d results (have %d)" % (count, len(self.results)))

    def op(self, line, timeout=OP_TIMEOUT):
        """Runs one operation (sent after all earlier ones) and returns its result."""
        self.send(line)
        return self.wait_results(self.sent, timeout)[self.sent - 1]

    def ok(self, line, timeout=OP_TIMEOUT):
        """Runs an operation that must succeed; returns its result."""
        r = self.op(line, timeout)
        check("error" not in r, "%s: %r succeeds, got %s" % (self.name, line, r))
        return r

    def value(self, line, timeout=OP_TIMEOUT):
        return self.ok(line, timeout)["value"]

    def error(self, line, timeout=OP_TIMEOUT):
        """The error code of an operation that must fail."""
        r = self.op(line, timeout)
        check("error" in r, "%s: %r fails, got %s" % (self.name, line, r))
        return r["error"]

    def state(self):
        """The store as {key: typed value}, read key by key; a string key stands for
        itself, any other key for its typed JSON."""
        keys = self.value("keys")["data"]
        result = {}
        for k in keys:
            name = k["data"] if k["@data-type"] == "string" else json.dumps(k, sort_keys=True)
            result[name] = self.value("get " + json.dumps(k))
        return result

    def close(self, timeout=EXIT_TIMEOUT):
        """Ends stdin and returns the exit code."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise TestFailure("%s did not exit within %.0f s\n%s"
                              % (self.name, timeout, self.describe()))
        for t in self.readers:
            t.join(timeout)
        return code

    def describe(self, tail=15, width=200):
        def cut(lines):
            return [l if len(l) <= width else l[:width] + "..." for l in lines[-tail:]]
        with self.cond:
            out = cut([json.dumps(r) for r in self.results])
            err = cut(self.err_lines)
        return ("--- %s broker-store %s (exit %s)\n--- results (last %d):\n%s\n"
                "--- stderr (last %d):\n%s"
                % (self.name, " ".join(self.args), self.proc.poll(), len(out), "\n".join(out),
                   len(err), "\n".join(err)))

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(EXIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            pass


def run_tool(binary, args, stdin_text=None, timeout=RUN_TIMEOUT):
    """Runs broker-store to completion: (exit code, stdout results, stderr text)."""
    proc = subprocess.run([binary] + args, input=(stdin_text or "").encode(),
                          capture_output=True, timeout=timeout)
    results = []
    for line in proc.stdout.decode(errors="replace").splitlines():
        try:
            results.append(json.loads(line))
        except ValueError:
            results.append({"unparsable": line})
    return proc.returncode, results, proc.stderr.decode(errors="replace")


def run_node(binary, args, timeout=RUN_TIMEOUT):
    """Runs broker-node to completion: (exit code, stdout, stderr)."""
    proc = subprocess.run([binary] + args, stdin=subprocess.DEVNULL, capture_output=True,
                          timeout=timeout)
    return proc.returncode, proc.stdout.decode(errors="replace"), \
        proc.stderr.decode(errors="replace")


def start_node_on(binary, cleanup, port, args, name, attempts=40, pause=0.25):
    """A node on a fixed port; the port of a killed process may linger for a moment."""
    for _ in range(attempts):
        try:
            return cleanup.add(Node(binary, ["-p", str(port)] + args, name))
        except TestFailure:
            time.sleep(pause)
    raise TestFailure("%s could not listen on port %d" % (name, port))


def run_suite(tests):
    """Runs `tests` (callables taking the broker-node and broker-store paths) in order."""
    if len(sys.argv) != 3:
        print("usage: %s <broker-node> <broker-store>" % sys.argv[0], file=sys.stderr)
        sys.exit(2)
    node_bin, tool_bin = sys.argv[1], sys.argv[2]
    for b in (node_bin, tool_bin):
        if not os.access(b, os.X_OK):
            print("not executable: %s" % b, file=sys.stderr)
            sys.exit(2)
    failed = 0
    for test in tests:
        name = test.__doc__.strip().splitlines()[0] if test.__doc__ else test.__name__
        start = time.monotonic()
        try:
            test(node_bin, tool_bin)
        except Exception as e:  # Report and go on: one failure must not hide the others.
            failed += 1
            print("FAIL %s (%.1f s): %s: %s" % (name, time.monotonic() - start,
                                                 type(e).__name__, e), flush=True)
            continue
        print("ok   %s (%.1f s)" % (name, time.monotonic() - start), flush=True)
    sys.exit(1 if failed else 0)
