#!/usr/bin/env python3
"""Access rules cost: fan-out and 1 -> 1 with 100 rules configured against none, same run.

Each run starts a fresh broker-node. Configurations:
  none        no broker.security.rules-file: nothing is checked
  rules100    a rules file with 100 rules for the anonymous identity (the benchmark's
              connections send no credentials): 25 publish, 25 deny-publish (14 of them
              below /fanout/, so the publish check walks a deep prefix), 25 subscribe, 25
              deny-subscribe outside /fanout/ (subscriptions stay unfiltered: deliveries
              are not checked one by one)
  filtered    (not run by default) rules100 plus a deny-subscribe below /fanout/ that
              matches nothing: every subscription is filtered, so every delivery is checked

Points:
  fanout-ws   one WebSocket publisher -> --fanout-n WebSocket subscribers (fanout-drive);
              the server's CPU over the throughput phase, per delivery
  1to1-ws     the same with one subscriber
  1to1-peer   one native peering publisher -> one peering subscriber (broker-fanout-native);
              the server's CPU (all threads, /proc schedstat) over the whole client run,
              per delivery of both phases

--callgrind 1 runs every point once more per configuration with the node under callgrind
(instrumentation switched on once the node listens, so start-up is not counted): instructions
per delivery, and how many of them are spent in access-control functions
(ACCESS_FUNCTIONS), which neither the load of a shared machine nor batching moves. The
verdict uses that share when present (share / (1 - share): the cost against the same run
without the checks), else the wall-clock ratio of server CPU per delivery.

Repetitions interleave the configurations (the order alternates), so that a ratio compares
runs under the same load; tables show medians, ratios are per repetition, then the median.
The verdict (issue target: at most 3 % slower with 100 rules) is on the server's CPU per
delivery; the throughput ratio is shown next to it.

    bench/access_cost.py                                   # ~3 minutes
    BUILD_DIR=build NO_BUILD=1 REPS=5 bench/access_cost.py
    CONFIGS=none,rules100,filtered POINTS=fanout-ws bench/access_cost.py
"""

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

import benchlib as bl  # noqa: E402  (it puts tests/lib on the path, for brokertest)
from brokertest.net import LOCALHOST, free_port  # noqa: E402

OPTIONS = [
    ("--reps", int, 3, "repetitions (at least 3 for a verdict)"),
    ("--configs", str, "none,rules100", "configurations (also: filtered)"),
    ("--points", str, "fanout-ws,1to1-ws,1to1-peer", "what to run"),
    ("--fanout-n", int, 100, "subscribers of the fan-out point"),
    ("--seconds", float, 2.0, "throughput phase of each run"),
    ("--latency-seconds", float, 0.5, "latency phase of each run"),
    ("--callgrind", int, 0, "also count the node's instructions per delivery (1: on)"),
    ("--callgrind-seconds", float, 2.0, "throughput phase of a run under callgrind"),
]
TARGET = 1.03
RUN_TIMEOUT = 120


def rules_text(filtered):
    """100 rules for the anonymous identity (101 with `filtered`)."""
    pub = ["/fanout/"] + ["/zeek/cluster/node/worker-%d/" % i for i in range(24)]
    deny_pub = (["/fanout/deny-%d/" % i for i in range(14)]
                + ["/zeek/control/%d/" % i for i in range(11)])
    sub = ["/fanout/"] + ["/zeek/logs/%d/" % i for i in range(24)]
    deny_sub = ["/zeek/secret/%d/" % i for i in range(25)]
    if filtered:
        deny_sub.append("/fanout/secret/")
    assert len(pub) + len(deny_pub) + len(sub) + len(deny_sub) == 100 + int(filtered)

    def lst(xs):
        return "[" + ", ".join('"%s"' % x for x in xs) + "]"
    return ("# bench/access_cost.py\nidentity.anonymous {\n  publish = %s\n  deny-publish = %s\n"
            "  subscribe = %s\n  deny-subscribe = %s\n}\n"
            % (lst(pub), lst(deny_pub), lst(sub), lst(deny_sub)))


def server_cpu_ns(pid):
    """CPU time of every live thread of `pid` (schedstat, ns)."""
    total = 0
    task_dir = "/proc/%d/task" % pid
    for tid in os.listdir(task_dir):
        try:
            with open(os.path.join(task_dir, tid, "schedstat")) as f:
                total += int(f.read().split()[0])
        except OSError:
            pass
    return total


def parse_result(line):
    out = {}
    for x in line.split()[1:]:
        if "=" in x:
            k, v = x.split("=", 1)
            try:
                out[k] = float(v)
            except ValueError:
                out[k] = v
    return out


def one_run(run, args, bins, rules_files, config, point, callgrind_dir=None):
    """A fresh node in `config`, one driver run of `point`; {rate, server_ns, driver_ns} per
    delivery (with `callgrind_dir`: the node runs under callgrind, and `server_ir` is its
    instructions per delivery), or None (the failure is printed)."""
    port = free_port()
    node_args = ["--listen-address", LOCALHOST, "--broker.disable-ssl",
                 "--broker.log-level=warning"]
    if rules_files.get(config):
        node_args.append("--broker.security.rules-file=" + rules_files[config])
    if point.endswith("-ws"):
        node_args += ["--broker.web-socket.address=%s" % LOCALHOST,
                      "--broker.web-socket.port=%d" % port,
                      "--broker.web-socket.max-clients=20000"]
    else:
        node_args += ["-p", str(port)]
    binary = bins["broker-node"]
    out_file = None
    if callgrind_dir:
        out_file = os.path.join(callgrind_dir, "callgrind.%s.%s" % (config, point))
        node_args = ["--tool=callgrind", "--instr-atstart=no",
                     "--callgrind-out-file=" + out_file, binary] + node_args
        binary = "valgrind"
    server = run.start(binary, node_args, "node-%s-%s" % (config, point))
    stopped = False
    try:
        bl.wait_listening(server, port, timeout=120 if callgrind_dir else 15)
        time.sleep(0.2)
        if callgrind_dir:
            subprocess.run(["callgrind_control", "-i", "on", str(server.pid)], check=True,
                           capture_output=True, timeout=60)
        n = args.fanout_n if point == "fanout-ws" else 1
        seconds = args.callgrind_seconds if callgrind_dir else args.seconds
        common = ["--port", str(port), "--subscribers", str(n), "--seconds", str(seconds),
                  "--latency-seconds", str(args.latency_seconds)]
        if callgrind_dir:
            common += ["--timeout", "600"]
        if point.endswith("-ws"):
            cmd = [bins["fanout-drive"], "--system", "ws", "--server-pid", str(server.pid)]
        else:
            cmd = [bins["broker-fanout-native"]]
        before = server_cpu_ns(server.pid)
        p = subprocess.run(cmd + common, capture_output=True, text=True, timeout=RUN_TIMEOUT)
        after = server_cpu_ns(server.pid)
        lines = [l for l in p.stdout.splitlines() if l.startswith("RESULT ")]
        if p.returncode != 0 or not lines:
            run.say("# FAILED %s %s: %s %s" % (config, point, p.stdout.strip()[-300:],
                                               p.stderr.strip()[-300:]))
            return None
        r = parse_result(lines[0])
        if r.get("complete", 0) != 1 or r.get("lost", 0) != 0:
            run.say("# INCOMPLETE %s %s: %s" % (config, point, lines[0]))
            return None
        if point.endswith("-ws"):
            server_ns = r["server_cpu_s"] * 1e9 / r["delivered"]
            driver_ns = r["driver_cpu_s"] * 1e9 / r["delivered"]
        else:
            server_ns = (after - before) / (r["delivered"] + r["lat_samples"])
            driver_ns = r["cpu_s"] * 1e9 / (r["delivered"] + r["lat_samples"])
        result = {"rate": r["rate"], "server_ns": server_ns, "driver_ns": driver_ns}
        if callgrind_dir:
            server.stop(signal.SIGTERM, timeout=120)
            stopped = True
            total, access = callgrind_counts(out_file)
            result["server_ir"] = total / (r["delivered"] + r["lat_samples"])
            result["access_ir"] = access / (r["delivered"] + r["lat_samples"])
        return result
    finally:
        if not stopped:
            server.stop(signal.SIGTERM, timeout=120 if callgrind_dir else 15)


# Functions of access control in the message path: everything in security:: (the checks,
# the guard, the prefix trie) and the connections' check_access() (notices, reloads).
ACCESS_FUNCTIONS = ("broker::internal::security::", "::check_access()")


def callgrind_counts(path):
    """(instructions in total, instructions in access-control functions, self cost) of a
    callgrind output file. Inlined checks (connection_access::may_receive) count for their
    caller: a flag and two atomic loads per delivery when no granted prefix is filtered."""
    p = subprocess.run(["callgrind_annotate", "--auto=no", "--threshold=100", path],
                       capture_output=True, text=True, check=True)
    total = None
    access = 0
    for line in p.stdout.splitlines():
        parts = line.split(None, 1)
        if len(parts) < 2 or not parts[0].replace(",", "").isdigit():
            continue
        count = int(parts[0].replace(",", ""))
        if "PROGRAM TOTALS" in line:
            total = count
            continue
        # "<count> (<share>)  <file>:<function> [<object>]"
        func = parts[1].split(")", 1)[-1].strip().split(":", 1)[-1]
        if any(x in func for x in ACCESS_FUNCTIONS):
            access += count
    if total is None:
        raise bl.BenchError("callgrind_annotate found no totals in %s" % path)
    return total, access


def check_rules(node_bin, path):
    p = subprocess.run([node_bin, "--check-config", "--broker.security.rules-file=" + path],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise bl.BenchError("the rules file does not load: %s %s" % (p.stdout, p.stderr))


def main():
    args = bl.parse_args(__doc__, OPTIONS)
    configs = [c for c in args.configs.split(",") if c]
    points = [x for x in args.points.split(",") if x]
    for c in configs:
        if c not in ("none", "rules100", "filtered"):
            raise SystemExit("unknown configuration %s" % c)
    for x in points:
        if x not in ("fanout-ws", "1to1-ws", "1to1-peer"):
            raise SystemExit("unknown point %s" % x)
    if "none" not in configs:
        raise SystemExit("the configurations must include none (the baseline)")
    with bl.Run("access_cost", args) as run, tempfile.TemporaryDirectory() as tmp:
        bins = run.build("broker-node", "fanout-drive", "broker-fanout-native")
        rules_files = {"none": None}
        for c in configs:
            if c != "none":
                path = os.path.join(tmp, c + ".conf")
                with open(path, "w") as f:
                    f.write(rules_text(c == "filtered"))
                check_rules(bins["broker-node"], path)
                rules_files[c] = path
        results = {}  # (point, config) -> [per rep dict or None]
        for rep in range(args.reps):
            for point in points:
                order = configs if rep % 2 == 0 else list(reversed(configs))
                for config in order:
                    run.progress("rep %d/%d %s %s" % (rep + 1, args.reps, point, config))
                    results.setdefault((point, config), []).append(
                        one_run(run, args, bins, rules_files, config, point))
        counted = {}  # (point, config) -> result under callgrind
        if args.callgrind:
            for point in points:
                for config in configs:
                    run.progress("callgrind %s %s" % (point, config))
                    counted[(point, config)] = one_run(run, args, bins, rules_files, config,
                                                       point, callgrind_dir=tmp)
        run.raw["results"] = {"%s/%s" % k: v for k, v in results.items()}
        run.raw["callgrind"] = {"%s/%s" % k: v for k, v in counted.items()}
        report(run, args, configs, points, results, counted)


def report(run, args, configs, points, results, counted):
    run.say("")
    run.say("Medians of %d repetitions; ns are CPU per delivery; ratios per repetition, then "
            "the median (server ns: with rules / none, rate: none / with rules)." % args.reps)
    run.say("")
    rows = []
    verdicts = []
    for point in points:
        base = results[(point, "none")]
        for config in configs:
            runs = results[(point, config)]
            ok = [r for r in runs if r]
            if not ok:
                rows.append([point, config, "failed", "", "", "", ""])
                continue
            row = [point, config, bl.fmt_int(bl.median([r["rate"] for r in ok])),
                   bl.fmt(bl.median([r["server_ns"] for r in ok])),
                   bl.fmt(bl.median([r["driver_ns"] for r in ok]))]
            if config == "none":
                row += ["", ""]
            else:
                cpu = [r["server_ns"] / b["server_ns"] for r, b in zip(runs, base) if r and b]
                rate = [b["rate"] / r["rate"] for r, b in zip(runs, base) if r and b]
                cpu_ratio = bl.median(cpu) if cpu else None
                rate_ratio = bl.median(rate) if rate else None
                row += ["%.3f" % cpu_ratio if cpu else "-", "%.3f" % rate_ratio if rate else "-"]
                if config == "rules100":
                    verdicts.append((point, cpu_ratio, rate_ratio, len(cpu)))
            rows.append(row)
    run.table(["point", "rules", "delivered/s", "server ns/delivery", "driver ns/delivery",
               "server ns ratio", "rate ratio"], rows)
    run.say("")
    ir_ratio = {}
    access_share = {}
    if counted:
        run.say("Under callgrind (one run each; the node's instructions from the moment it "
                "listens to its exit, per delivery of both phases):")
        run.say("")
        rows = []
        for point in points:
            base = counted.get((point, "none"))
            for config in configs:
                r = counted.get((point, config))
                if not r:
                    rows.append([point, config, "failed", "", "", ""])
                    continue
                ratio = ""
                if config != "none" and base:
                    ratio = "%.3f" % (r["server_ir"] / base["server_ir"])
                    if config == "rules100":
                        ir_ratio[point] = r["server_ir"] / base["server_ir"]
                rows.append([point, config, bl.fmt_int(r["server_ir"]), ratio,
                             bl.fmt(r["access_ir"]),
                             "%.2f %%" % (100.0 * r["access_ir"] / r["server_ir"])])
                if config == "rules100":
                    access_share[point] = r["access_ir"] / r["server_ir"]
        run.table(["point", "rules", "server instructions/delivery", "ratio",
                   "in access control", "share"], rows)
        run.say("")
        run.say("(Instructions per delivery vary with batch sizes, which timing decides, by "
                "more than the rules cost; the share of access-control functions in the same "
                "run does not.)")
        run.say("")
    for point, cpu_ratio, rate_ratio, n in verdicts:
        if point in access_share:
            share = access_share[point]
            run.say("VERDICT %s: with 100 rules access control is %.2f %% of the node's "
                    "instructions per delivery (callgrind; all instructions %+.1f %% against "
                    "none; wall clock: %s server CPU, %s throughput): target <= +3 %% %s"
                    % (point, share * 100, (ir_ratio.get(point, 1) - 1) * 100,
                       "%+.1f %%" % ((cpu_ratio - 1) * 100) if cpu_ratio else "n/a",
                       "%+.1f %%" % ((1 / rate_ratio - 1) * 100) if rate_ratio else "n/a",
                       "MET" if share / (1 - share) <= TARGET - 1 else "MISSED"))
            continue
        if cpu_ratio is None or n < 3:
            run.say("VERDICT %s: no verdict (%d complete pairs, need 3)" % (point, n))
            continue
        run.say("VERDICT %s: 100 rules cost %+.1f %% server CPU per delivery (throughput "
                "%+.1f %%): target <= +3 %% %s"
                % (point, (cpu_ratio - 1) * 100, (1 / rate_ratio - 1) * 100,
                   "MET" if cpu_ratio <= TARGET else "MISSED"))


if __name__ == "__main__":
    bl.run_main(main)
