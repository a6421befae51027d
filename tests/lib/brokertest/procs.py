"""Processes of a system test or benchmark: started, watched line by line, always stopped.

    with Cleanup() as cleanup:
        server = cleanup.add(Proc(tp_bin, ["--server", "127.0.0.1:0", "--json"], "server"))
        port = server.listening_port()     # "listening on N" or {"type":"listening","port":N}
        server.wait_for(lambda l: l.startswith("rate: "), what="a rate line")
        server.stop(signal.SIGINT)         # the exit code; fails if it does not exit
        server.summary()                   # the {"type":"summary"} line

Two reader threads per process collect its stdout and stderr lines. Every wait is bounded
and fails with a TestFailure that shows the process's last lines. A process is killed when
the Cleanup (or its own `with` block) ends, when the script exits, and (through
`setpriv --pdeathsig`) when the script itself is killed; so start processes from the main
thread, whose end is the script's. Each process leads its own process group, so that
kill() also ends what it started. exit_on_signals() turns SIGINT, SIGTERM and SIGHUP into a
normal exit, so that all of this runs then too. Every process starts without the caller's
BROKER_* environment variables: Broker programs read them as settings.
"""

import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

from .checks import TestFailure

# Default bounds of waiting for a line, and for a process to exit.
WAIT_TIMEOUT = 30.0
EXIT_TIMEOUT = 30.0
# How long run_once() lets a command run.
RUN_TIMEOUT = 30.0
# How often a wait re-checks its deadline (lines wake it at once).
POLL = 0.2
LISTEN_PREFIX = "listening on "

_live = []  # every Proc not yet reaped, for kill_all()
_setpriv = shutil.which("setpriv")


def kill_all(describe=False):
    """Kills every process still running (printing its output first if `describe`)."""
    for p in list(_live):
        if describe:
            print(p.describe(), file=sys.stderr, flush=True)
        p.kill()


def _exit_on_signal(signum, frame):
    raise SystemExit(128 + signum)


def exit_on_signals():
    """SIGINT, SIGTERM and SIGHUP end the script through SystemExit, so that `with` blocks
    and the exit handler stop what it started."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _exit_on_signal)


atexit.register(kill_all)


def clean_env(env=None):
    """The environment without BROKER_* variables, updated with `env`."""
    result = {k: v for k, v in os.environ.items() if not k.startswith("BROKER_")}
    result.update(env or {})
    return result


def parse_json(line):
    """The JSON object on `line`, or None."""
    if not line.startswith("{"):
        return None
    try:
        return json.loads(line)
    except ValueError:
        return None


def run_once(binary, args=(), stdin_text=None, timeout=RUN_TIMEOUT, env=None):
    """Runs a command to completion: (exit code, stdout text, stderr text)."""
    argv = [binary] + list(args)
    try:
        done = subprocess.run(argv, input=(stdin_text or "").encode(), capture_output=True,
                              timeout=timeout, env=clean_env(env))
    except subprocess.TimeoutExpired:
        raise TestFailure("%s did not finish within %.0f s" % (" ".join(argv), timeout))
    return (done.returncode, done.stdout.decode(errors="replace"),
            done.stderr.decode(errors="replace"))


class _Lines:
    """The lines of one stream; with `keep`, only the last `keep` to 2 x `keep` of them stay
    in memory, but positions count every line since the start."""

    def __init__(self, keep):
        self.items = []
        self.dropped = 0
        self.keep = keep
        self.ended = False

    def append(self, line):
        self.items.append(line)
        if self.keep and len(self.items) >= 2 * self.keep:
            self.dropped += len(self.items) - self.keep
            del self.items[:len(self.items) - self.keep]

    def total(self):
        return self.dropped + len(self.items)

    def since(self, position):
        return self.items[max(0, position - self.dropped):]


class Proc:
    """One started process whose stdout and stderr are collected line by line.

    `keep`: keep only the last `keep` or more lines per stream (default: all); `log_dir`:
    also write every line to <log_dir>/<name>.<pid>.log; `stdin`: a pipe for write(), else
    /dev/null; `start=False`: spawn() comes later (Node retries it)."""

    def __init__(self, binary, args=(), name=None, env=None, stdin=False, keep=None,
                 log_dir=None, start=True):
        self.argv = [binary] + [str(a) for a in args]
        self.name = name or os.path.basename(binary)
        self.env = dict(env or {})
        self.stdin = stdin
        self.keep = keep
        self.log_dir = log_dir
        self.popen = None
        if start:
            self.spawn()

    def spawn(self):
        """Starts the process (again, with fresh output buffers, after kill())."""
        self._cond = threading.Condition()
        self._out, self._err = _Lines(self.keep), _Lines(self.keep)
        prefix = [_setpriv, "--pdeathsig", "KILL"] if _setpriv else []
        self.popen = subprocess.Popen(prefix + self.argv,
                                      stdin=subprocess.PIPE if self.stdin else subprocess.DEVNULL,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      env=clean_env(self.env), start_new_session=True)
        self.pid = self.popen.pid
        _live.append(self)
        self._log = None
        if self.log_dir:
            self._log = open(os.path.join(self.log_dir, "%s.%d.log" % (self.name, self.pid)), "w")
            self._log.write("# %s\n" % " ".join(self.argv))
        self._readers = [threading.Thread(target=self._read, args=(s, lines, tag), daemon=True)
                         for s, lines, tag in ((self.popen.stdout, self._out, "out"),
                                               (self.popen.stderr, self._err, "err"))]
        for t in self._readers:
            t.start()

    def _read(self, stream, lines, tag):
        for raw in stream:
            line = raw.decode(errors="replace").rstrip("\n")
            with self._cond:
                lines.append(line)
                if self._log:
                    self._log.write("%s %s\n" % (tag, line))
                self._cond.notify_all()
        with self._cond:
            lines.ended = True
            self._cond.notify_all()

    # -- output ---------------------------------------------------------------------------

    @property
    def lines(self):
        """The stdout lines so far (the last ones, with `keep`)."""
        with self._cond:
            return list(self._out.items)

    @property
    def err_lines(self):
        with self._cond:
            return list(self._err.items)

    def mark(self):
        """A position in stdout for lines_since() and wait_for(start=...)."""
        with self._cond:
            return self._out.total()

    def lines_since(self, mark):
        with self._cond:
            return list(self._out.since(mark))

    def matching(self, pred, stderr=False):
        return [l for l in (self.err_lines if stderr else self.lines) if pred(l)]

    def _wait(self, lines, step, timeout, what, start=0):
        """Calls step(new lines) under the lock, first with the lines from position `start`
        on, then as more arrive, until it returns something other than None; fails after
        `timeout` or once the stream ended. `what` (a text, or a function giving it) names
        what was awaited."""
        deadline = time.monotonic() + timeout
        seen = start
        with self._cond:
            while True:
                fresh = lines.since(seen)
                seen = max(seen, lines.total())
                result = step(fresh)
                if result is not None:
                    return result
                left = deadline - time.monotonic()
                if left <= 0 or lines.ended:
                    break
                self._cond.wait(min(left, POLL))
        raise TestFailure("%s: %s %s\n%s" % (
            self.name, "ended without" if lines.ended else "timed out waiting for",
            what() if callable(what) else what, self.describe()))

    def wait_for(self, pred, timeout=WAIT_TIMEOUT, what="a matching line", stderr=False,
                 start=0):
        """The first line (of stdout, or stderr) from position `start` (see mark()) on that
        satisfies `pred`."""
        return self._wait(self._err if stderr else self._out,
                          lambda fresh: next((l for l in fresh if pred(l)), None),
                          timeout, what, start)

    def wait_count(self, pred, count, timeout=WAIT_TIMEOUT, what="matching lines",
                   stderr=False):
        """Waits until `count` lines satisfy `pred`; returns them."""
        found = []

        def step(fresh):
            found.extend(l for l in fresh if pred(l))
            return found if len(found) >= count else None
        return self._wait(self._err if stderr else self._out, step, timeout,
                          lambda: "%d x %s (have %d)" % (count, what, len(found)))

    def listening_port(self, timeout=WAIT_TIMEOUT):
        """The port of "listening on N" (broker-node, broker-throughput) or of
        {"type":"listening","port":N} (broker-throughput --json)."""
        def port_of(line):
            if line.startswith(LISTEN_PREFIX):
                return int(line[len(LISTEN_PREFIX):])
            obj = parse_json(line)
            if isinstance(obj, dict) and obj.get("type") == "listening":
                return int(obj["port"])
            return None
        return port_of(self.wait_for(lambda l: port_of(l) is not None, timeout,
                                     "the 'listening on' line"))

    def json_lines(self):
        """Every stdout line parsed as a JSON object (None where it is none)."""
        return [parse_json(l) for l in self.lines]

    def json_objects(self, kind=None):
        """The JSON objects on stdout, those with "type": `kind` if given."""
        return [o for o in self.json_lines()
                if isinstance(o, dict) and (kind is None or o.get("type") == kind)]

    def summary(self):
        """broker-throughput's JSON summary, printed once as it ends."""
        found = self.json_objects("summary")
        if len(found) != 1:
            raise TestFailure("%s: expected one JSON summary, got %d\n%s"
                              % (self.name, len(found), self.describe()))
        return found[0]

    def describe(self, tail=30, width=200):
        """The command, exit status and last lines, for failure messages."""
        def cut(lines):
            return "\n".join(l if len(l) <= width else l[:width] + "..." for l in lines[-tail:])
        if self.popen is None:
            return "--- %s: not started" % self.name
        with self._cond:
            out, err = cut(self._out.items), cut(self._err.items)
        return ("--- %s (pid %d, exit %s): %s\n--- stdout:\n%s\n--- stderr:\n%s"
                % (self.name, self.pid, self.popen.poll(), " ".join(self.argv), out, err))

    # -- input and lifetime ---------------------------------------------------------------

    def write(self, text):
        """Writes to stdin (a Proc started with stdin=True)."""
        self.popen.stdin.write(text.encode())
        self.popen.stdin.flush()

    def close_stdin(self):
        try:
            self.popen.stdin.close()
        except OSError:
            pass

    def alive(self):
        return self.popen.poll() is None

    def send_signal(self, sig):
        if self.alive():
            self.popen.send_signal(sig)

    def wait_exit(self, timeout=EXIT_TIMEOUT):
        """The exit code, once the process ended and its output is read; kills it and
        fails if it does not end within `timeout`."""
        try:
            code = self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            failure = TestFailure("%s did not exit within %.0f s\n%s"
                                  % (self.name, timeout, self.describe()))
            self.kill()
            raise failure
        self._reap()
        return code

    def expect_exit(self, code, timeout=EXIT_TIMEOUT):
        actual = self.wait_exit(timeout)
        if actual != code:
            raise TestFailure("%s exited with %s, expected %s\n%s"
                              % (self.name, actual, code, self.describe()))

    def stop(self, sig=signal.SIGTERM, timeout=EXIT_TIMEOUT):
        """Sends `sig` and returns the exit code (see wait_exit)."""
        self.send_signal(sig)
        return self.wait_exit(timeout)

    def kill(self):
        """SIGKILL to the process and whatever it started (its own process group)."""
        if self.popen is None:
            return
        if self.alive():
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except OSError:
                self.popen.kill()
        try:
            self.popen.wait(EXIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            pass
        self._reap()

    def _reap(self):
        for t in self._readers:
            t.join(EXIT_TIMEOUT)
        if self in _live:
            _live.remove(self)
        with self._cond:
            if self._log:
                self._log.close()
                self._log = None
        if self.popen.stdin:
            self.close_stdin()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            print(self.describe(), file=sys.stderr, flush=True)
        self.kill()
        return False


class Cleanup:
    """Kills every process and closes every other object (sockets, raw clients) added to
    it when the `with` block ends; prints the processes' output if the block failed."""

    def __init__(self):
        self.held = []

    def add(self, obj):
        self.held.append(obj)
        return obj

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        procs = [o for o in self.held if isinstance(o, Proc)]
        if exc_type is not None:
            for p in procs:
                print(p.describe(), file=sys.stderr, flush=True)
        for o in reversed(self.held):
            try:
                o.kill() if isinstance(o, Proc) else o.close()
            except Exception:  # Cleaning up must go on; the test's own error matters.
                pass
        return False
