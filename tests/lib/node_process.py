"""Starting broker-node processes in system tests, reading their output, and cleaning up.

    with Cleanup() as cleanup:
        a = cleanup.add(Node(binary, ["-t", "/t", "-v"]))
        port = a.port                               # parsed from "listening on N"
        a.wait_for(lambda l: l.startswith("status peer_added"))

Every wait has a timeout; Cleanup kills everything it holds, whatever happened.
"""

import os
import socket
import subprocess
import sys
import threading
import time

STARTUP_TIMEOUT = 15.0
WAIT_TIMEOUT = 20.0
EXIT_TIMEOUT = 15.0

LISTEN_PREFIX = "listening on "


class TestFailure(AssertionError):
    pass


def check(condition, message):
    if not condition:
        raise TestFailure(message)


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago (bound and released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Node:
    """One broker-node process whose stdout and stderr are collected line by line."""

    def __init__(self, binary, args, name="node", listen=True, plain_tcp=True, env=None):
        self.name = name
        # Tests speak plain TCP; saying so also silences the node's unencrypted-peering warning.
        self.args = list(args) + (["--broker.disable-ssl"] if plain_tcp else [])
        self.lines = []
        self.err_lines = []
        self.cond = threading.Condition()
        self.proc = subprocess.Popen([binary] + self.args, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        self.readers = [threading.Thread(target=self._read, args=(self.proc.stdout, self.lines),
                                         daemon=True),
                        threading.Thread(target=self._read,
                                         args=(self.proc.stderr, self.err_lines), daemon=True)]
        for t in self.readers:
            t.start()
        self.port = None
        if listen:
            line = self.wait_for(lambda l: l.startswith(LISTEN_PREFIX), STARTUP_TIMEOUT,
                                 what="the 'listening on' line")
            self.port = int(line[len(LISTEN_PREFIX):])

    def _read(self, stream, sink):
        for raw in stream:
            line = raw.decode(errors="replace").rstrip("\n")
            with self.cond:
                sink.append(line)
                self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def snapshot(self):
        with self.cond:
            return list(self.lines)

    def matching(self, pred):
        return [l for l in self.snapshot() if pred(l)]

    def received(self):
        """The `received <topic> <value>` lines as (topic, value text)."""
        result = []
        for l in self.snapshot():
            if l.startswith("received "):
                topic, _, value = l[len("received "):].partition(" ")
                result.append((topic, value))
        return result

    def wait_for(self, pred, timeout=WAIT_TIMEOUT, what=None, start=0):
        """The first line from index `start` on that satisfies `pred`."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for l in self.lines[start:]:
                    if pred(l):
                        return l
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self._readers_alive()):
                    break
                self.cond.wait(min(left, 0.2))
        raise TestFailure("%s: timed out waiting for %s\n%s" % (
            self.name, what or "a matching line", self.describe()))

    def wait_count(self, pred, count, timeout=WAIT_TIMEOUT, what=None):
        """Waits until at least `count` lines satisfy `pred`; returns them."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                found = [l for l in self.lines if pred(l)]
                if len(found) >= count:
                    return found
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self._readers_alive()):
                    break
                self.cond.wait(min(left, 0.2))
        raise TestFailure("%s: timed out waiting for %d x %s (have %d)\n%s" % (
            self.name, count, what or "matching lines", len(found), self.describe()))

    def _readers_alive(self):
        return any(t.is_alive() for t in self.readers)

    def describe(self, tail=40, width=160):
        def cut(lines):
            return [l if len(l) <= width else l[:width] + "..." for l in lines[-tail:]]
        with self.cond:
            out, err = cut(self.lines), cut(self.err_lines)
        return ("--- %s %s (exit %s)\n--- stdout (last %d):\n%s\n--- stderr (last %d):\n%s"
                % (self.name, " ".join(self.args), self.proc.poll(), len(out), "\n".join(out),
                   len(err), "\n".join(err)))

    def signal(self, sig):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)

    def wait_exit(self, timeout=EXIT_TIMEOUT):
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise TestFailure("%s did not exit within %.0f s\n%s"
                              % (self.name, timeout, self.describe()))
        for t in self.readers:
            t.join(timeout)
        return code

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(EXIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            pass


def is_status(code, peer=None):
    """A predicate for `status <code> <peer> ...` lines (any peer if None)."""
    prefix = "status %s " % code + ("%s " % peer if peer else "")
    return lambda line: line.startswith(prefix)


def is_received(line):
    return line.startswith("received ")


def peer_uri(port):
    return "tcp://127.0.0.1:%d" % port


class Cleanup:
    """Kills every node and closes every socket it holds on exit."""

    def __init__(self):
        self.nodes = []
        self.closers = []

    def add(self, node):
        self.nodes.append(node)
        return node

    def close_later(self, obj):
        self.closers.append(obj)
        return obj

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            for n in self.nodes:
                print(n.describe(), file=sys.stderr)
        for c in self.closers:
            try:
                c.close()
            except Exception:
                pass
        for n in self.nodes:
            n.kill()
        return False


def run_tests(tests):
    """Runs `tests` (callables taking the broker-node path) in order; exits 1 on failure."""
    if len(sys.argv) != 2:
        print("usage: %s <path to broker-node>" % sys.argv[0], file=sys.stderr)
        sys.exit(2)
    binary = sys.argv[1]
    if not os.access(binary, os.X_OK):
        print("not executable: %s" % binary, file=sys.stderr)
        sys.exit(2)
    failed = 0
    for test in tests:
        name = test.__doc__.strip().splitlines()[0] if test.__doc__ else test.__name__
        start = time.monotonic()
        try:
            test(binary)
        except Exception as e:  # Report and go on: one failure must not hide the others.
            failed += 1
            print("FAIL %s (%.1f s): %s: %s" % (name, time.monotonic() - start,
                                                 type(e).__name__, e), flush=True)
            continue
        print("ok   %s (%.1f s)" % (name, time.monotonic() - start), flush=True)
    sys.exit(1 if failed else 0)
