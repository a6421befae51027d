"""Running broker-node for the WebSocket system tests, with bounded waits and cleanup.

    async def main(binary):
        with Node(binary, metrics=True) as node:      # BROKER_WEB_SOCKET_PORT = a free port
            ws, ack = await subscribe(node.ws_port, ["/test"])
            ...

    run(main, limit=60)       # parses argv, bounds the whole test, prints PASS or the failure

Every wait has a timeout. A Node kills its process when the `with` block ends, whatever
happened; on failure run() prints the tail of every node's output.
"""

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
import traceback
import urllib.request

import websockets

STARTUP_TIMEOUT = 10.0
WAIT_TIMEOUT = 10.0
WS_PATH = "/v1/messages/json"

_all_nodes = []


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


class Node:
    """One broker-node process with its WebSocket server (and optionally /metrics) enabled.

    Readiness is the "web-socket: listening on" log line on stderr; the peering port is
    parsed from "listening on N" on stdout. The ports are picked by binding and releasing a
    socket; should another process grab one in between, the node is restarted on new ports.
    """

    def __init__(self, binary, args=(), name="node", metrics=False, env=None, tls=None):
        """`tls`: broker.ssl.* options (e.g. {"certificate": path, ...}) for wss:// and
        TLS peerings; without it the node runs plain (--broker.disable-ssl)."""
        self.binary = binary
        self.tls = dict(tls or {})
        if self.tls:
            transport = ["--broker.ssl.%s=%s" % kv for kv in sorted(self.tls.items())]
        else:
            transport = ["--broker.disable-ssl=true"]
        self.args = transport + ["-p", "0"] + list(args)
        self.name = name
        self.metrics = metrics
        self.extra_env = dict(env or {})
        self.proc = None
        _all_nodes.append(self)
        for attempt in range(3):
            if self._start():
                return
            self.kill()
        raise TestFailure("%s did not start\n%s" % (name, self.describe()))

    def _start(self):
        self.lines, self.err_lines = [], []
        self.cond = threading.Condition()
        self.ws_port = free_port()
        self.metrics_port = free_port() if self.metrics else None
        env = dict(os.environ)
        env.pop("BROKER_PORT", None)
        env["BROKER_WEB_SOCKET_PORT"] = str(self.ws_port)
        if self.metrics:
            env["BROKER_METRICS_PORT"] = str(self.metrics_port)
        else:
            env.pop("BROKER_METRICS_PORT", None)
        env.update(self.extra_env)
        self.proc = subprocess.Popen([self.binary] + self.args, env=env,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.readers = [
            threading.Thread(target=self._read, args=(self.proc.stdout, self.lines), daemon=True),
            threading.Thread(target=self._read, args=(self.proc.stderr, self.err_lines),
                             daemon=True)]
        for t in self.readers:
            t.start()
        wanted = ["web-socket: listening on *:%d" % self.ws_port]
        if self.metrics:
            wanted.append("metrics: listening on *:%d" % self.metrics_port)
        try:
            for w in wanted:
                self.wait_err(lambda l, w=w: l.endswith(w), STARTUP_TIMEOUT, what=repr(w))
            line = self.wait_out(lambda l: l.startswith("listening on "), STARTUP_TIMEOUT,
                                 what="'listening on N'")
        except TestFailure:
            return False
        self.peer_port = int(line[len("listening on "):])
        return True

    def _read(self, stream, sink):
        for raw in stream:
            line = raw.decode(errors="replace").rstrip("\n")
            with self.cond:
                sink.append(line)
                self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def _wait(self, lines, pred, timeout, what):
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
                self.cond.wait(min(left, 0.1))
        raise TestFailure("%s: timed out waiting for %s\n%s"
                          % (self.name, what, self.describe()))

    def wait_out(self, pred, timeout=WAIT_TIMEOUT, what="a matching stdout line"):
        return self._wait(self.lines, pred, timeout, what)

    def wait_err(self, pred, timeout=WAIT_TIMEOUT, what="a matching stderr line"):
        return self._wait(self.err_lines, pred, timeout, what)

    def url(self, path=WS_PATH):
        return "%s://127.0.0.1:%d%s" % ("wss" if self.tls else "ws", self.ws_port, path)

    def terminate(self, timeout=WAIT_TIMEOUT):
        """Sends SIGTERM; returns the exit status, or fails if the node does not exit."""
        self.proc.terminate()
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise TestFailure("%s did not exit within %.1f s of SIGTERM\n%s"
                              % (self.name, timeout, self.describe()))

    def describe(self, tail=30):
        if self.proc is None:
            return "--- %s: not started" % self.name
        with self.cond:
            out, err = self.lines[-tail:], self.err_lines[-tail:]
        return ("--- %s: broker-node %s (ws %s, metrics %s, exit %s)\n--- stdout:\n%s\n"
                "--- stderr:\n%s" % (self.name, " ".join(self.args), self.ws_port,
                                     self.metrics_port, self.proc.poll(), "\n".join(out),
                                     "\n".join(err)))

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill()
        return False


# -- library clients (websockets) ---------------------------------------------------------


async def connect(port, path=WS_PATH, **kwargs):
    """An open websockets connection that neither pings nor limits message sizes; wss://
    when an `ssl` context is given."""
    kwargs.setdefault("max_size", None)
    kwargs.setdefault("ping_interval", None)
    kwargs.setdefault("open_timeout", WAIT_TIMEOUT)
    kwargs.setdefault("close_timeout", 2)
    scheme = "wss" if kwargs.get("ssl") else "ws"
    return await websockets.connect("%s://127.0.0.1:%d%s" % (scheme, port, path), **kwargs)


async def subscribe(port, topics, **kwargs):
    """Connects, sends `topics` as the first message and returns (ws, ack text)."""
    ws = await connect(port, **kwargs)
    await ws.send(json.dumps(topics))
    ack = await recv(ws, what="the ack")
    check(json.loads(ack).get("type") == "ack", "expected an ack, got %r" % ack)
    return ws, ack


async def recv(ws, timeout=WAIT_TIMEOUT, what="a message"):
    try:
        return await asyncio.wait_for(ws.recv(), timeout)
    except asyncio.TimeoutError:
        raise TestFailure("timed out after %.1f s waiting for %s" % (timeout, what))


async def recv_data(ws, timeout=WAIT_TIMEOUT, what="a data message"):
    """The next frame that is not on an internal <$> topic (status events may interleave)."""
    while True:
        text = await recv(ws, timeout, what)
        if not text.startswith('{"type":"data-message","topic":"<$>'):
            return text


async def expect_silence(ws, seconds=0.3, what="the client"):
    """Fails if `ws` receives anything within `seconds`."""
    try:
        text = await asyncio.wait_for(ws.recv(), seconds)
    except asyncio.TimeoutError:
        return
    raise TestFailure("%s should have received nothing, got %r" % (what, text[:300]))


async def expect_close(ws, code, timeout=WAIT_TIMEOUT, what="the connection"):
    """Waits for the server to close `ws` with `code`; frames before the close fail."""
    try:
        text = await asyncio.wait_for(ws.recv(), timeout)
    except websockets.ConnectionClosed:
        check_eq(ws.close_code, code, "close code of %s" % what)
        return
    except asyncio.TimeoutError:
        raise TestFailure("%s was not closed within %.1f s" % (what, timeout))
    raise TestFailure("expected %s to close with %d, got a frame %r" % (what, code, text[:300]))


def data_message(topic, data_type, data):
    """A compact data-message frame, exactly as the server writes it."""
    return '{"type":"data-message","topic":%s,"@data-type":"%s","data":%s}' % (
        json.dumps(topic), data_type, data)


def error_frame(context, code="deserialization_failed"):
    return '{"type":"error","code":"%s","context":%s}' % (code, json.dumps(context))


# -- metrics ------------------------------------------------------------------------------


def scrape(port, timeout=WAIT_TIMEOUT):
    """GET /metrics as {'name{labels}': value}; fails unless the answer is 200 text/plain."""
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=timeout) as res:
        check_eq(res.status, 200, "status of GET /metrics")
        check(res.headers.get("Content-Type", "").startswith("text/plain"),
              "Content-Type of /metrics: %r" % res.headers.get("Content-Type"))
        text = res.read().decode()
    result = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        key, _, value = line.rpartition(" ")
        result[key] = float(value)
    return result


async def poll_metric(port, key, pred, timeout=WAIT_TIMEOUT, what=None):
    """Scrapes until `pred(value of key)` holds; returns the metrics. Fails on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        m = await asyncio.get_running_loop().run_in_executor(None, scrape, port)
        if key in m and pred(m[key]):
            return m
        if time.monotonic() > deadline:
            raise TestFailure("timed out waiting for %s; %s = %r"
                              % (what or "a metric", key, m.get(key)))
        await asyncio.sleep(0.05)


# -- running a test -----------------------------------------------------------------------


def _abort(name, seconds):
    print("FAIL %s: hung for %d s" % (name, seconds), flush=True)
    for n in _all_nodes:
        print(n.describe(), file=sys.stderr, flush=True)
        n.kill()
    os._exit(1)


def run(main, limit):
    """Runs `main(binary)` (a coroutine function) within `limit` seconds; exits 0 on success.

    The broker-node binary is the only argument."""
    if len(sys.argv) != 2 or not os.access(sys.argv[1], os.X_OK):
        print("usage: %s <path to broker-node>" % sys.argv[0], file=sys.stderr)
        sys.exit(2)
    name = os.path.basename(sys.argv[0])
    start = time.monotonic()
    # A backstop in case the event loop itself hangs: kill the nodes and fail.
    watchdog = threading.Timer(limit + 20, _abort, args=(name, limit + 20))
    watchdog.daemon = True
    watchdog.start()
    try:
        asyncio.run(asyncio.wait_for(main(sys.argv[1]), limit))
    except BaseException as e:
        # asyncio.TimeoutError is TimeoutError since Python 3.11: tell them apart by the clock.
        if isinstance(e, asyncio.TimeoutError) and time.monotonic() - start >= limit:
            print("FAIL %s: the whole test took longer than %d s" % (name, limit))
        else:
            print("FAIL %s: %s" % (name, e))
            traceback.print_exc()
        for n in _all_nodes:
            print(n.describe(), file=sys.stderr)
            n.kill()
        sys.exit(1)
    for n in _all_nodes:
        n.kill()
    print("PASS %s (%.1f s)" % (name, time.monotonic() - start))
