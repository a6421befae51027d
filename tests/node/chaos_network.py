"""node.chaos (chaos.py): the network under test, its faults, and what was recorded.

Five broker-nodes A-E in a ring with chords, each link a relay process that the later node
dials; one StampClient per node. Network applies the plan's faults (SIGKILL and restart,
SIGSTOP/SIGCONT of a node or a relay, client churn and bursts), logs them, and samples every
node's loss counters; its records are what chaos_accounting.py checks. Times are
time.monotonic() throughout, as the clients' are.
"""

import calendar
import collections
import glob
import os
import re
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.checks import TestFailure  # noqa: E402
from brokertest.net import scrape_metrics  # noqa: E402
from brokertest.nodes import Node, is_status, peer_uri  # noqa: E402
from brokertest.proxy import Proxy  # noqa: E402
from brokertest.stamped import StampClient  # noqa: E402

NAMES = "ABCDE"
EDGES = [(0, 1), (1, 2), (2, 3), (3, 4), (0, 4), (0, 2), (1, 3)]
# CHAOS_TRACE=1: the relays record what crosses each link, and the report shows which links
# reordered messages took (slow: for replaying a seed, not for CI).
TRACE = os.environ.get("CHAOS_TRACE") == "1"
RATE = 40            # messages/s per client
PAD = 1000           # filler bytes per message, so that a paused link fills up
POLICIES = ["disconnect", "drop_oldest", "drop_newest"]
PEER_BUFFERS = [128, 256, 512]
LOSS_KINDS = ("peer", "web_socket")
SCRAPE_EVERY = 0.5
SCRAPE_TIMEOUT = 3.0
HEAL_TIMEOUT = 60.0  # for the network to carry every pair again after the chaos


def link_name(e):
    i, j = EDGES[e]
    return NAMES[i] + "-" + NAMES[j]


# -- the network --------------------------------------------------------------------------

class Network:
    """The nodes, relays and clients of one run, the fault log and the metrics samples."""

    def __init__(self, cleanup, binary, rng, log_dir):
        self._records(log_dir)
        self.down = set()
        self.paused_nodes = set()
        self.locks = [threading.Lock() for _ in NAMES]
        self.settings = [(rng.choice(POLICIES), rng.choice(PEER_BUFFERS)) for _ in NAMES]
        self.proxies = {}
        self.nodes = []
        for j in range(len(NAMES)):
            for e, (i, k) in enumerate(EDGES):
                if k == j:
                    trace = os.path.join(log_dir, "%s.trace" % link_name(e)) if TRACE \
                        else None
                    self.proxies[e] = cleanup.add(Proxy(self.nodes[i].port, link_name(e),
                                                        trace=trace, log_dir=log_dir))
            policy, size = self.settings[j]
            dials = [peer_uri(self.proxies[e].port) for e, (_, k) in enumerate(EDGES)
                     if k == j]
            args = ["-v", "--broker.peer-overflow-policy=" + policy,
                    "--broker.peer-buffer-size=%d" % size,
                    "--broker.web-socket-buffer-size=8192"]
            if dials:
                args += ["--peers", ",".join(dials)]
            self.births[(j, 0)] = self.now()
            self.nodes.append(cleanup.add(Node(binary, args, NAMES[j], web_socket=True,
                                               metrics=True, log_dir=log_dir)))
        for j, node in enumerate(self.nodes):
            degree = sum(1 for e in EDGES if j in e)
            node.wait_count(is_status("peer_added"), degree, what="%d peer_added" % degree)
        self.clients = [StampClient(j, self.nodes[j].ws_port, RATE, PAD) for j in
                        range(len(NAMES))]
        self._stop_scraping = threading.Event()
        self._scraper = threading.Thread(target=self._scrape_loop, daemon=True)

    def _records(self, log_dir):
        # Times are time.monotonic() throughout, as the clients' are; printed from t0.
        self.t0 = time.monotonic()
        self.wall_offset = time.time() - self.t0  # for the nodes' log time stamps
        self.log_dir = log_dir
        self.events = []   # (t, what, target)
        self.kills = []    # t
        self.pauses = []   # (from, to) of every pause of a node or a link
        self._paused_at = {}
        self.samples = {i: [] for i in range(len(NAMES))}  # [(t_lo, t_hi, life, losses)]
        self.life = [0] * len(NAMES)   # incarnation of each node
        self.births = {(i, 0): self.t0 for i in range(len(NAMES))}  # (node, life) -> start
        self.clients = []
        self.names = {}

    @classmethod
    def records_only(cls, log_dir):
        """A Network without processes, whose records a test fills in by hand."""
        net = cls.__new__(cls)
        net._records(log_dir)
        return net

    def now(self):
        return time.monotonic()

    def log(self, what, target):
        t = self.now()
        self.events.append((t, what, target))
        print("[%6.2f s, %s] %s %s" % (t - self.t0, self.wall(t), what, target), flush=True)

    def wall(self, t):
        """A monotonic time as the nodes' logs write it (UTC, milliseconds)."""
        w = t + self.wall_offset
        return time.strftime("%H:%M:%S", time.gmtime(w)) + ".%03d" % (int(w * 1000) % 1000)

    # -- metrics --------------------------------------------------------------------------

    def scrape(self, j):
        """Samples node j's loss counters (call with locks[j] held)."""
        if j in self.down or j in self.paused_nodes:
            return
        lo = self.now()
        try:
            m = scrape_metrics(self.nodes[j].metrics_port, SCRAPE_TIMEOUT)
        except (OSError, TestFailure):
            return
        losses = {}
        for key, value in m.items():
            if key.startswith(("broker_handler_dropped_messages_total", "broker_handler_disconnects_total")) \
                    and any('kind="%s"' % k in key for k in LOSS_KINDS):
                losses[key] = value
            elif key == "broker_out_of_order_messages_total":
                # Copies dropped to keep each origin's order: they too explain a gap.
                losses[key] = value
        self.samples[j].append((lo, self.now(), self.life[j], losses))

    def _scrape_loop(self):
        while not self._stop_scraping.wait(SCRAPE_EVERY):
            for j in range(len(NAMES)):
                with self.locks[j]:
                    self.scrape(j)

    def drop_intervals(self):
        """[(t_lo, t_hi, node, {counter: growth})]: a policy dropped or disconnected
        something on node `node` within (t_lo, t_hi)."""
        result = []
        for j, samples in self.samples.items():
            prev = {}  # life -> (t_lo, losses)
            for lo, hi, life, losses in samples:
                before_t, before = prev.get(life, (self.births[(j, life)], {}))
                grown = {k: v - before.get(k, 0) for k, v in losses.items()
                         if v > before.get(k, 0)}
                if grown:
                    result.append((before_t, hi, j, grown))
                prev[life] = (lo, losses)
        return result

    # -- what the nodes logged ---------------------------------------------------------------

    def peerings(self):
        """[(t, node, peer id)]: every "peered with" of every node's log, in time order."""
        pattern = re.compile(r"^err (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.(\d{3}) info "
                             r"peering: peered with (\S+)")
        result = []
        for path in glob.glob(os.path.join(self.log_dir, "[A-E].*.log")):
            name = os.path.basename(path)[0]
            with open(path, errors="replace") as f:
                for line in f:
                    m = pattern.match(line)
                    if m:
                        wall = calendar.timegm(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S"))
                        wall += int(m.group(2)) / 1000.0
                        result.append((wall - self.wall_offset, name, m.group(3)))
        return sorted(result)

    def node_names(self):
        """Node id -> "C", "C'", "C''"...: the incarnations of node C that C's client
        connected to, in order (from the ids in the acks)."""
        names = {}
        lives = collections.defaultdict(list)
        for c in self.clients:
            for conn in c.connections:
                if conn.node_id not in lives[c.index]:
                    lives[c.index].append(conn.node_id)
        for j, ids in lives.items():
            for k, node_id in enumerate(ids):
                names[node_id] = NAMES[j] + "'" * k
        return names

    # -- faults ---------------------------------------------------------------------------

    def apply(self, action, target, arg):
        if action == "kill":
            with self.locks[target]:
                self.scrape(target)
                self.nodes[target].kill()
                self.down.add(target)
                self.paused_nodes.discard(target)
                self.kills.append(self.now())
            self.log("kill", NAMES[target])
        elif action == "restart":
            self.log("restart", NAMES[target])
            with self.locks[target]:
                born = self.now()
                self.nodes[target].restart()
                self.life[target] += 1
                self.births[(target, self.life[target])] = born
                self.down.discard(target)
            self.log("ready", NAMES[target])
        elif action == "pause_node":
            with self.locks[target]:
                self.scrape(target)
                self.nodes[target].send_signal(signal.SIGSTOP)
                self.paused_nodes.add(target)
            self._paused_at[("node", target)] = self.now()
            self.log("pause", NAMES[target])
        elif action == "resume_node":
            with self.locks[target]:
                self.nodes[target].send_signal(signal.SIGCONT)
                self.paused_nodes.discard(target)
            self.pauses.append((self._paused_at.pop(("node", target)), self.now()))
            self.log("resume", NAMES[target])
        elif action == "pause_link":
            self.proxies[target].pause()
            self._paused_at[("link", target)] = self.now()
            self.log("pause link", link_name(target))
        elif action == "resume_link":
            self.proxies[target].resume()
            self.pauses.append((self._paused_at.pop(("link", target)), self.now()))
            self.log("resume link", link_name(target))
        elif action == "churn":
            self.clients[target].churn(arg)
            self.log("churn client", "%s (away %.2f s)" % (NAMES[target], arg))
        elif action == "burst":
            self.clients[target].burst(arg)
            self.log("burst", "%s (%d messages)" % (NAMES[target], arg))

    def run_plan(self, plan):
        start = self.now()
        for t, action, target, arg in plan:
            delay = start + t - self.now()
            if delay > 0:
                time.sleep(delay)
            self.apply(action, target, arg)

    def heal(self):
        """Undoes every fault still in effect."""
        for e, p in self.proxies.items():
            if p.paused:
                self.apply("resume_link", e, None)
        for j in sorted(self.paused_nodes):
            self.apply("resume_node", j, None)
        for j in sorted(self.down):
            self.apply("restart", j, None)


# -- waiting for the network ---------------------------------------------------------------

def missing_pairs(clients, since):
    """(source, receiver) pairs whose receiver's open connection has nothing from the
    source that was sent at or after `since`."""
    result = []
    for r in clients:
        conn = r.current()
        for s in clients:
            if s is r:
                continue
            last = conn.last.get(s.index) if conn else None
            if last is None or s.sent[last] < since:
                result.append((NAMES[s.index], NAMES[r.index]))
    return result


def wait_until(pred, timeout, poll=0.2):
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            return False
        time.sleep(poll)
    return True


def wait_converged(net, since, what):
    if not wait_until(lambda: not missing_pairs(net.clients, since), HEAL_TIMEOUT):
        raise TestFailure("%s: after %.0f s these (source, receiver) pairs still had no "
                          "message sent after %.2f s: %s" % (
                              what, HEAL_TIMEOUT, since - net.t0,
                              missing_pairs(net.clients, since)))


def drained(clients):
    for r in clients:
        conn = r.current()
        if conn is None:
            return False
        for s in clients:
            if s is not r and conn.last.get(s.index, -1) < s.last_seq():
                return False
    return True
