"""Helpers of the broker-throughput system tests: processes with collected output, bounded
waits, and cleanup. Python 3 standard library only.

    def main(tp, node):
        with Cleanup() as c:
            server = c.add(Proc(tp, ["--server", "127.0.0.1:0", "--json", "-n", "100"]))
            port = server.listening_port()
            ...

    run(main)     # argv: <broker-throughput> <broker-node>; prints PASS or the failure

Every wait has a timeout; Cleanup kills every process it holds, whatever happened.
"""

import json
import os
import socket
import subprocess
import sys
import threading
import time
import traceback

WAIT_TIMEOUT = 30.0
EXIT_TIMEOUT = 60.0


class TestFailure(AssertionError):
    pass


def check(condition, message):
    if not condition:
        raise TestFailure(message)


def check_eq(actual, expected, what):
    if actual != expected:
        raise TestFailure("%s:\n  expected: %r\n  actual:   %r" % (what, expected, actual))


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago (bound and released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parse_json(line):
    try:
        return json.loads(line)
    except ValueError:
        return None


class Proc:
    """One process whose stdout and stderr are collected line by line."""

    def __init__(self, binary, args, name=None, env=None):
        self.name = name or os.path.basename(binary)
        self.args = list(args)
        self.lines = []
        self.err_lines = []
        self.cond = threading.Condition()
        full_env = dict(os.environ)
        # The benchmark reads BROKER_* variables like any Broker program: start clean.
        for key in [k for k in full_env if k.startswith("BROKER_")]:
            del full_env[key]
        full_env.update(env or {})
        self.proc = subprocess.Popen([binary] + self.args, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=full_env)
        self.readers = [
            threading.Thread(target=self._read, args=(self.proc.stdout, self.lines), daemon=True),
            threading.Thread(target=self._read, args=(self.proc.stderr, self.err_lines),
                             daemon=True)]
        for t in self.readers:
            t.start()

    def _read(self, stream, sink):
        for raw in stream:
            line = raw.decode(errors="replace").rstrip("\n")
            with self.cond:
                sink.append(line)
                self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def _wait_line(self, lines, pred, timeout, what):
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for l in lines:
                    if pred(l):
                        return l
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None
                                 and not any(t.is_alive() for t in self.readers)):
                    break
                self.cond.wait(min(left, 0.2))
        raise TestFailure("%s: timed out waiting for %s\n%s" % (self.name, what, self.describe()))

    def wait_for(self, pred, timeout=WAIT_TIMEOUT, what="a matching line"):
        """The first stdout line that satisfies `pred`."""
        return self._wait_line(self.lines, pred, timeout, what)

    def wait_for_err(self, pred, timeout=WAIT_TIMEOUT, what="a matching stderr line"):
        """The first stderr line that satisfies `pred`."""
        return self._wait_line(self.err_lines, pred, timeout, what)

    def listening_port(self, timeout=WAIT_TIMEOUT):
        """The port of `listening on N` or of {"type":"listening","port":N}."""
        def port_of(line):
            if line.startswith("listening on "):
                return int(line[len("listening on "):])
            obj = parse_json(line)
            if isinstance(obj, dict) and obj.get("type") == "listening":
                return int(obj["port"])
            return None
        return port_of(self.wait_for(lambda l: port_of(l) is not None, timeout,
                                     "the listening line"))

    def json_lines(self):
        with self.cond:
            lines = list(self.lines)
        return [parse_json(l) for l in lines]

    def summary(self):
        """The JSON summary object (after the process exited)."""
        found = [o for o in self.json_lines() if isinstance(o, dict) and o.get("type") == "summary"]
        check(len(found) == 1, "%s: expected one JSON summary\n%s" % (self.name, self.describe()))
        return found[0]

    def describe(self, tail=30, width=200):
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


def expect_exit(proc, code, timeout=EXIT_TIMEOUT):
    actual = proc.wait_exit(timeout)
    check(actual == code, "%s exited with %s, expected %s\n%s"
          % (proc.name, actual, code, proc.describe()))


class Cleanup:
    """Kills every process it holds on exit; prints their output if the test failed."""

    def __init__(self):
        self.procs = []

    def add(self, proc):
        self.procs.append(proc)
        return proc

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            for p in self.procs:
                print(p.describe(), file=sys.stderr)
        for p in self.procs:
            p.kill()
        return False


def run(main):
    """Runs main(tp_binary, node_binary) and exits 0 (PASS) or 1 (the failure)."""
    if len(sys.argv) != 3:
        print("usage: %s <broker-throughput> <broker-node>" % sys.argv[0], file=sys.stderr)
        sys.exit(2)
    try:
        main(sys.argv[1], sys.argv[2])
    except Exception:
        traceback.print_exc()
        print("FAIL")
        sys.exit(1)
    print("PASS")
    sys.exit(0)
