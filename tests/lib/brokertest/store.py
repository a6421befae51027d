"""broker-store sessions: one process fed operations through stdin, one JSON result a line.

    with Cleanup() as cleanup:
        a = cleanup.add(Node(node_bin, ["--master-stores", "s"] + STORE_FLAGS, "A"))
        c = cleanup.add(Tool(tool_bin, "s", ["--peer", addr(a.port)], "C"))
        c.op("put k 1")                     # -> {"op": "put", "ok": True}
        c.value("get k")                    # -> {"@data-type": "integer", "data": 1}

    code, results, err = run_tool(tool_bin, ["--peer", addr(a.port), "s", "keys"])
"""

import json

from .checks import check
from .procs import Proc, run_once

# Short store timers, so that a lost peer counts as gone after 1 s (10 x 100 ms) and a
# request gives up after 3 s. Every process of a store test gets the same ones.
STORE_FLAGS = ["--broker.store.heartbeat-interval=100", "--broker.store.request-timeout=3000"]
OP_TIMEOUT = 20.0


def typed(kind, value):
    """Broker's typed JSON form, as broker-store prints values."""
    return {"@data-type": kind, "data": value}


def parse_result(line):
    try:
        return json.loads(line)
    except ValueError:
        return {"unparsable": line}


def run_tool(binary, args, stdin_text=None):
    """Runs broker-store to completion: (exit code, results, stderr text)."""
    code, out, err = run_once(binary, args, stdin_text)
    return code, [parse_result(l) for l in out.splitlines()], err


class Tool(Proc):
    """One broker-store session on `store` (see the module comment); with listen=True it
    also accepts peerings, on .port."""

    def __init__(self, binary, store, args, name="tool", listen=False):
        args = list(args) + ["--broker.disable-ssl"] + STORE_FLAGS
        if listen:
            args += ["--listen", "--listen-address=127.0.0.1"]
        super().__init__(binary, args + ["--", store], name, stdin=True)
        self.sent = 0
        self.port = None
        self._first = 0  # stdout lines before the first result
        self._parsed = []  # the results parsed so far
        if listen:
            first = parse_result(self.wait_for(lambda l: True, OP_TIMEOUT, "the listening line"))
            check("listening" in first, "%s: the first line is {\"listening\": N}: %s"
                  % (name, first))
            self.port = first["listening"]
            self._first = 1

    def _parse(self, count=0, timeout=OP_TIMEOUT):
        """The results parsed so far, after waiting for `count` of them."""
        if count:
            self.wait_for(lambda l: True, timeout, "result %d" % count,
                          start=self._first + count - 1)
        self._parsed.extend(parse_result(l)
                            for l in self.lines_since(self._first + len(self._parsed)))
        return self._parsed

    @property
    def results(self):
        return list(self._parse())

    def send(self, lines):
        """Writes operations without waiting for their results."""
        if isinstance(lines, str):
            lines = [lines]
        self.sent += len(lines)
        self.write("".join(l + "\n" for l in lines))

    def wait_results(self, count, timeout=OP_TIMEOUT):
        """Waits until `count` results arrived in total; returns all of them."""
        return list(self._parse(count, timeout))

    def op(self, line, timeout=OP_TIMEOUT):
        """Runs one operation (sent after all earlier ones) and returns its result."""
        self.send(line)
        return self._parse(self.sent, timeout)[self.sent - 1]

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
        result = {}
        for k in self.value("keys")["data"]:
            name = k["data"] if k["@data-type"] == "string" else json.dumps(k, sort_keys=True)
            result[name] = self.value("get " + json.dumps(k))
        return result

    def close(self):
        """Ends stdin and returns the exit code."""
        self.close_stdin()
        return self.wait_exit()
