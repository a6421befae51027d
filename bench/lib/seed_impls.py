"""The two implementations bench/seed.py compares, and what their command lines need:
how each node listens and dials, its topic syntax, its sender's arguments, its rate lines,
and the private network namespace Zeek Broker's nodes need (they listen on every
interface)."""

import os
import re
import subprocess
import sys
import time

import benchlib as bl
from brokertest.net import LOCALHOST, free_port

# A sender's start-up, the receiver's and the idle peers' waits.
START_TIMEOUT = 30.0


class Impl:
    """One implementation's broker-node and broker-throughput and how to call them."""

    def __init__(self, name, node, tp):
        self.name, self.node, self.tp = name, node, tp
        self.zeek = name == "zeek"

    def topics(self, topics):
        if self.zeek:  # CAF list syntax.
            return '[%s]' % ",".join('"%s"' % t for t in topics)
        return ",".join(topics)

    def peers(self, port):
        """The arguments that make a node dial 127.0.0.1:port (CAF wants --long=value)."""
        if self.zeek:
            return ["--peers=[<tcp://%s:%d>]" % (LOCALHOST, port)]
        return ["--peers", "tcp://%s:%d" % (LOCALHOST, port)]

    def listen(self):
        """(arguments, port or None): how a node of this implementation listens."""
        if self.zeek:
            port = free_port()
            return ["--disable-ssl", "-p", str(port)], port
        return ["--broker.disable-ssl", "--listen-address", LOCALHOST, "-p", "0"], None

    def no_listen(self):
        return ["--disable-ssl"] if self.zeek else ["--broker.disable-ssl", "--no-listen"]

    def sender_args(self, rate, port):
        # Both: -r batches/s, -s events per batch. Zeek's batch of s events is ONE message
        # (a list of s events), ours is s messages; with -s 1 both send one event per
        # message, rate messages per second.
        # Zeek's --verbose prints the sender's status events (a lost peering).
        common = ["-t", "1", "-r", str(rate), "-s", "1"] + (["--verbose"] if self.zeek else [])
        return common + ["--disable-ssl", "%s:%d" % (LOCALHOST, port)]


def find_impls(run_say):
    ours_dir = None  # filled by the caller after building
    zeek_dir = os.environ.get("ZEEK_BROKER_BIN")
    zeek = None
    if zeek_dir:
        node, tp = (os.path.join(zeek_dir, b) for b in ("broker-node", "broker-throughput"))
        if os.access(node, os.X_OK) and os.access(tp, os.X_OK):
            zeek = Impl("zeek", node, tp)
        else:
            run_say("# ZEEK_BROKER_BIN=%s has no executable broker-node and "
                    "broker-throughput: Zeek Broker skipped" % zeek_dir)
    return ours_dir, zeek


def wait_listening(proc, port, timeout=START_TIMEOUT):
    """Waits until something accepts on 127.0.0.1:port (Zeek's node prints no port line)."""
    bl.wait_listening(proc, port, timeout)


RATE_RE = re.compile(r"(?:rate: )?(\d+)(?: messages)?/s\s*$")


def rates(lines):
    """Received messages per second from a node's rate lines (ours: `rate: N messages/s`,
    Zeek's verbose relay mode: `... N/s`)."""
    result = []
    for line in lines:
        m = RATE_RE.search(line)
        if m and ("rate: " in line or line.rstrip().endswith("/s")):
            result.append(int(m.group(1)))
    return result


def maybe_reexec_in_netns(args, zeek):
    """Zeek's broker-node listens on every interface; run everything in a fresh network
    namespace with only the loopback device when it is used (see the file comment)."""
    if os.environ.get("SEED_IN_NETNS") == "1" or args.netns == "0":
        return
    if args.netns == "auto" and zeek is None:
        return
    unshare = ["unshare", "--net"] if os.geteuid() == 0 else ["unshare", "--user",
                                                                "--map-root-user", "--net"]
    probe_ns = subprocess.run(unshare + ["true"], capture_output=True)
    if probe_ns.returncode != 0:
        if args.netns == "1":
            raise SystemExit("seed.py: unshare --net failed: %s" % probe_ns.stderr.decode())
        print("# warning: no private network namespace (unshare failed); Zeek's broker-node "
              "will listen on every interface during the run", file=sys.stderr)
        return
    env = dict(os.environ, SEED_IN_NETNS="1", NO_INSTALL="1")
    script = os.path.abspath(sys.argv[0])
    cmd = unshare + ["sh", "-c", 'ip link set lo up && exec "$@"', "sh",
                     sys.executable, script] + sys.argv[1:]
    os.execvpe(cmd[0], cmd, env)
