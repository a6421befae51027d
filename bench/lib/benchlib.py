"""What the bench/ scenario scripts share (idle_peers.py, peering.py, slow_consumer.py).

Python 3 standard library only. Each script does:

    args = benchlib.parse_args("idle_peers", description, [options...])
    with benchlib.Run("idle_peers", args) as run:    # results dir, header, cleanup
        bins = run.build("broker-node", "broker-throughput")
        node = run.start(bins["broker-node"], [...], "receiver")
        port = node.wait_listening()
        ...
        run.table(header, rows)                      # printed and kept in the report
        run.plot("idle_peers.png", gnuplot_script, {"cpu.dat": lines})

What it takes care of:
  - Building: BUILD_DIR (default <repo>/build-bench, Release) is configured if needed and
    the targets are built with ninja; NO_BUILD=1 uses the binaries as they are.
  - Processes: every process started through Run is stopped when the script ends, however
    it ends (exception, SIGINT, SIGTERM, SIGHUP). Each one also gets SIGKILL from the
    kernel if the script itself is killed (setpriv --pdeathsig).
  - /proc: CPU seconds (utime + stime of all threads) and resident memory of a pid.
  - Reporting: the machine, the source revision and `uptime` at start and end go to stdout
    and to <BUILD_DIR>/bench-results/<scenario>-<stamp>.md; raw numbers to a .json file
    beside it; plots to PLOT_DIR (default: the same directory).
"""

import argparse
import atexit
import collections
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
LOCALHOST = "127.0.0.1"

# How long a process gets to exit after SIGINT/SIGTERM before it is killed.
STOP_TIMEOUT = 10.0
# Default bound on waiting for a line (listening port, peer_added, ...).
WAIT_TIMEOUT = 30.0
# Lines of stdout/stderr kept per process for error messages.
KEEP_LINES = 2000


class BenchError(Exception):
    """A scenario could not run (a process died, a line never came)."""


# -- numbers and text ---------------------------------------------------------------------

def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt_int(x):
    """12345678 -> '12 345 678' (the style of doc/performance.md); None -> 'n/a'."""
    if x is None:
        return "n/a"
    return "{:,}".format(int(round(x))).replace(",", " ")


def fmt(x, digits=1):
    return "n/a" if x is None else "%.*f" % (digits, x)


def markdown_table(header, rows):
    """A Markdown table; the first column left-aligned, the others right-aligned."""
    cells = [list(map(str, header))] + [list(map(str, r)) for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    def line(r):
        return "| " + " | ".join(c.ljust(w) if i == 0 else c.rjust(w)
                                 for i, (c, w) in enumerate(zip(r, widths))) + " |"
    sep = "|" + "|".join(("-" * (w + 1) + "-") if i == 0 else ("-" * (w + 1) + ":")
                         for i, w in enumerate(widths)) + "|"
    return "\n".join([line(cells[0]), sep] + [line(r) for r in cells[1:]])


# -- /proc --------------------------------------------------------------------------------

def cpu_seconds(pid):
    """User + system CPU time of process `pid`, all threads, in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # Fields after the command name start at field 3 (state); utime and stime are 14 and 15.
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def memory_kib(pid):
    """{'VmRSS': kib, 'VmHWM': kib} of process `pid`."""
    result = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                result[key] = int(value.split()[0])
    return result


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def uptime_line():
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "load average: " + load_average()


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago (for options that cannot take 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOCALHOST, 0))
        return s.getsockname()[1]


class Sampler:
    """Samples CPU seconds and resident memory of some pids every `interval` seconds on a
    background thread. samples: [(t since start, {name: (cpu_s, rss_kib)})]."""

    def __init__(self, pids, interval=0.5):
        self.pids = dict(pids)
        self.interval = interval
        self.samples = []
        self.start = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            t = time.monotonic() - self.start
            row = {}
            for name, pid in self.pids.items():
                try:
                    row[name] = (cpu_seconds(pid), memory_kib(pid).get("VmRSS"))
                except (OSError, IndexError, ValueError):
                    pass
            self.samples.append((t, row))
            self._stop.wait(self.interval)

    def stop(self):
        self._stop.set()
        self._thread.join()
        return self.samples

    def peak_rss_kib(self, name):
        values = [row[name][1] for _, row in self.samples if name in row and row[name][1]]
        return max(values) if values else None


class WakeProbe:
    """What the machine does to a thread that only sleeps: a background thread sleeps
    `interval` seconds in a loop and records how late each wake-up is. Run next to a latency
    measurement, its percentiles show how much of a tail the scheduler alone adds on a busy
    machine (one Python thread: good to ~0.1 ms, which is far below the delays it is for)."""

    def __init__(self, interval=0.001):
        self.interval = interval
        self.late_us = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            t0 = time.perf_counter()
            time.sleep(self.interval)
            self.late_us.append((time.perf_counter() - t0 - self.interval) * 1e6)

    def stop(self):
        """{'p50_us', 'p99_us', 'p99_9_us', 'max_us', 'samples'} of the lateness."""
        self._stop.set()
        self._thread.join()
        xs = sorted(self.late_us)
        if not xs:
            return None
        def rank(q):
            return xs[min(len(xs) - 1, max(0, int(q * len(xs) + 0.999999) - 1))]
        return {"p50_us": rank(0.5), "p99_us": rank(0.99), "p99_9_us": rank(0.999),
                "max_us": xs[-1], "samples": len(xs)}


# -- processes ----------------------------------------------------------------------------

_live = []  # every Proc not yet reaped, for the exit and signal handlers
_setpriv = shutil.which("setpriv")


def _stop_all():
    for p in list(_live):
        p.kill()


def _on_signal(signum, frame):
    raise SystemExit(128 + signum)


atexit.register(_stop_all)


class Proc:
    """A started process whose stdout and stderr lines are collected by reader threads."""

    def __init__(self, argv, name, env=None, log_dir=None):
        self.name = name
        self.argv = list(argv)
        self.lines = collections.deque(maxlen=KEEP_LINES)
        self.line_count = 0  # stdout lines so far, including those the deque dropped
        self.err_lines = collections.deque(maxlen=KEEP_LINES)
        self.cond = threading.Condition()
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("BROKER_")}
        full_env.update(env or {})
        prefix = [_setpriv, "--pdeathsig", "KILL"] if _setpriv else []
        self.popen = subprocess.Popen(prefix + self.argv, stdin=subprocess.DEVNULL,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      env=full_env)
        self.pid = self.popen.pid
        _live.append(self)
        self._log = open(os.path.join(log_dir, "%s.%d.log" % (name, self.pid)), "w") \
            if log_dir else None
        if self._log:
            self._log.write("# %s\n" % " ".join(self.argv))
        self.readers = [threading.Thread(target=self._read, args=(s, q, tag), daemon=True)
                        for s, q, tag in ((self.popen.stdout, self.lines, "out"),
                                          (self.popen.stderr, self.err_lines, "err"))]
        for t in self.readers:
            t.start()

    def _read(self, stream, sink, tag):
        for raw in stream:
            line = raw.decode(errors="replace").rstrip("\n")
            with self.cond:
                sink.append(line)
                if sink is self.lines:
                    self.line_count += 1
                if self._log:
                    self._log.write("%s %s\n" % (tag, line))
                self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def describe(self, tail=15):
        with self.cond:
            out, err = list(self.lines)[-tail:], list(self.err_lines)[-tail:]
        return ("%s (pid %d, exit %s): %s\n  stdout: %s\n  stderr: %s"
                % (self.name, self.pid, self.popen.poll(), " ".join(self.argv),
                   "\n          ".join(out), "\n          ".join(err)))

    def mark(self):
        """A position in stdout for lines_since()."""
        with self.cond:
            return self.line_count

    def lines_since(self, mark):
        """The stdout lines that arrived after mark() returned `mark`."""
        with self.cond:
            n = min(self.line_count - mark, len(self.lines))
            return list(self.lines)[len(self.lines) - n:]

    def alive(self):
        return self.popen.poll() is None

    def wait_for(self, pred, timeout=WAIT_TIMEOUT, what="a matching line", stderr=False):
        """The first line (stdout, or stderr) that satisfies `pred`."""
        lines = self.err_lines if stderr else self.lines
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for line in lines:
                    if pred(line):
                        return line
                left = deadline - time.monotonic()
                if left <= 0 or (not self.alive()
                                 and not any(t.is_alive() for t in self.readers)):
                    raise BenchError("%s: no %s within %.0f s\n%s"
                                     % (self.name, what, timeout, self.describe()))
                self.cond.wait(min(left, 0.2))

    def wait_listening(self, timeout=WAIT_TIMEOUT):
        """The port of `listening on N` (broker-node) or {"type":"listening","port":N}."""
        def port_of(line):
            if line.startswith("listening on "):
                return int(line.split()[-1])
            obj = parse_json(line)
            if isinstance(obj, dict) and obj.get("type") == "listening":
                return int(obj["port"])
            return None
        return port_of(self.wait_for(lambda l: port_of(l) is not None, timeout,
                                     "listening line"))

    def json_objects(self, kind=None):
        with self.cond:
            objs = [parse_json(l) for l in self.lines]
        return [o for o in objs if isinstance(o, dict) and (kind is None or o.get("type") == kind)]

    def summary(self):
        """broker-throughput's JSON summary (after it ended), or a BenchError."""
        found = self.json_objects("summary")
        if not found:
            raise BenchError("%s printed no summary\n%s" % (self.name, self.describe()))
        return found[-1]

    def send_signal(self, sig):
        if self.alive():
            self.popen.send_signal(sig)

    def wait(self, timeout=STOP_TIMEOUT):
        """Exit code; kills the process if it does not end within `timeout`."""
        try:
            code = self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise BenchError("%s did not exit within %.0f s\n%s"
                             % (self.name, timeout, self.describe()))
        self._reap()
        return code

    def stop(self, sig=signal.SIGTERM, timeout=STOP_TIMEOUT):
        """Sends `sig` and waits for the exit (killing it after `timeout`); the exit code."""
        self.send_signal(sig)
        return self.wait(timeout)

    def kill(self):
        if self.alive():
            self.popen.kill()
        try:
            self.popen.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            pass
        self._reap()

    def _reap(self):
        for t in self.readers:
            t.join(STOP_TIMEOUT)
        if self in _live:
            _live.remove(self)
        if self._log:
            with self.cond:
                self._log.close()
                self._log = None


def parse_json(line):
    if not line.startswith("{"):
        return None
    try:
        return json.loads(line)
    except ValueError:
        return None


# -- a scenario run -----------------------------------------------------------------------

def parse_args(description, options):
    """argparse with `options` = [(flag, type, default, help)]; each flag's default may be
    overridden by the environment variable of the same name in upper case (--reps: REPS)."""
    parser = argparse.ArgumentParser(description=description,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    for flag, typ, default, help_text in options:
        env = flag.lstrip("-").replace("-", "_").upper()
        if env in os.environ:
            default = typ(os.environ[env])
        parser.add_argument(flag, type=typ, default=default,
                            help="%s (default %s; env %s)" % (help_text, default, env))
    return parser.parse_args()


class Run:
    """One invocation of a scenario: results directory, report, processes, plots."""

    def __init__(self, scenario, args):
        self.scenario = scenario
        self.args = args
        self.build_dir = os.path.abspath(os.environ.get("BUILD_DIR")
                                         or os.path.join(REPO, "build-bench"))
        self.stamp = time.strftime("%Y%m%d-%H%M%S")
        self.results = os.path.join(self.build_dir, "bench-results")
        self.log_dir = os.path.join(self.results, "%s-%s.logs" % (scenario, self.stamp))
        self.plot_dir = os.path.abspath(os.environ.get("PLOT_DIR") or self.results)
        self.report_path = os.path.join(self.results, "%s-%s.md" % (scenario, self.stamp))
        self.raw = {"scenario": scenario, "args": vars(args)}
        self.started = time.monotonic()
        self._report = None

    def __enter__(self):
        os.makedirs(self.log_dir, exist_ok=True)
        os.makedirs(self.plot_dir, exist_ok=True)
        self._report = open(self.report_path, "w")
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, _on_signal)
        self._install_deps()
        self.header()
        return self

    def __exit__(self, exc_type, exc, tb):
        _stop_all()
        if exc_type is None:
            self.say("")
            self.say("# load at end: %s" % uptime_line())
            self.say("# took %.0f s; report: %s" % (time.monotonic() - self.started,
                                                    self.report_path))
        elif exc_type is BenchError:
            self.say("FAILED: %s" % exc)
        with open(os.path.join(self.results, "%s-%s.json" % (self.scenario, self.stamp)),
                  "w") as f:
            json.dump(self.raw, f, indent=1, default=str)
        self._report.close()
        return False

    # -- output ---------------------------------------------------------------------------

    def say(self, text=""):
        print(text, flush=True)
        if self._report:
            self._report.write(text + "\n")
            self._report.flush()

    def progress(self, text):
        """A line on stderr only (not part of the report)."""
        print("  .. " + text, file=sys.stderr, flush=True)

    def table(self, header, rows):
        self.say(markdown_table(header, rows))

    def header(self):
        rev = os.environ.get("SOURCE_REV") or _git_revision()
        cpu = "unknown"
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
        self.say("# %s  %s" % (self.scenario, time.strftime("%Y-%m-%dT%H:%M:%S%z")))
        self.say("# command: %s" % " ".join([os.path.relpath(sys.argv[0], REPO)]
                                            + sys.argv[1:]))
        self.say("# settings: %s" % " ".join("%s=%s" % kv for kv in sorted(vars(self.args).items())))
        self.say("# source %s, build %s" % (rev, self.build_dir))
        self.say("# nproc %d; CPU %s; kernel %s" % (os.cpu_count(), cpu, os.uname().release))
        self.say("# load at start: %s" % uptime_line())
        self.raw["machine"] = {"nproc": os.cpu_count(), "cpu": cpu, "source": rev,
                               "load_start": load_average()}

    # -- building and starting ------------------------------------------------------------

    def _install_deps(self):
        script = os.path.join(REPO, "bench", "install-deps")
        if os.environ.get("NO_INSTALL") == "1":
            return
        if subprocess.run([script]).returncode != 0:
            print("warning: bench/install-deps failed; plots need gnuplot", file=sys.stderr)

    def build(self, *targets):
        """Builds `targets` in BUILD_DIR (unless NO_BUILD=1); {target: path of the binary}."""
        paths = {t: os.path.join(self.build_dir, t, t) for t in targets}
        if os.environ.get("NO_BUILD") != "1":
            if not os.path.exists(os.path.join(self.build_dir, "build.ninja")):
                subprocess.run(["cmake", "-S", REPO, "-B", self.build_dir, "-G", "Ninja",
                                "-DCMAKE_BUILD_TYPE=Release", "-DBROKER_BUILD_TESTS=OFF"],
                               check=True, stdout=subprocess.DEVNULL)
            self.progress("building %s in %s" % (" ".join(targets), self.build_dir))
            subprocess.run(["ninja", "-C", self.build_dir] + list(targets), check=True,
                           stdout=subprocess.DEVNULL)
        for t, p in paths.items():
            if not os.access(p, os.X_OK):
                raise BenchError("%s not found (build it, or set BUILD_DIR)" % p)
        return paths

    def start(self, binary, args, name, env=None):
        return Proc([binary] + list(args), name, env, self.log_dir)

    # -- plots ----------------------------------------------------------------------------

    def plot(self, png_name, script, data_files):
        """Writes `data_files` ({name: [lines]}) and runs `script` with gnuplot in the plot
        directory; the script sees the output name as the variable `out`. Returns the PNG
        path, or None without gnuplot."""
        gnuplot = shutil.which("gnuplot")
        png = os.path.join(self.plot_dir, png_name)
        work = os.path.join(self.log_dir, "plot")
        os.makedirs(work, exist_ok=True)
        for name, lines in data_files.items():
            with open(os.path.join(work, name), "w") as f:
                f.write("\n".join(lines) + "\n")
        script_path = os.path.join(work, png_name + ".gp")
        with open(script_path, "w") as f:
            f.write('out = "%s"\n' % png)
            f.write(script)
        if gnuplot is None:
            self.say("# no gnuplot (run bench/install-deps): plot script left in %s"
                     % script_path)
            return None
        proc = subprocess.run([gnuplot, script_path], cwd=work, capture_output=True, text=True)
        if proc.returncode != 0:
            self.say("# gnuplot failed (%s): %s" % (script_path, proc.stderr.strip()))
            return None
        self.say("# plot: %s" % png)
        return png


def _git_revision():
    try:
        out = subprocess.run(["git", "-C", REPO, "describe", "--always", "--dirty"],
                             capture_output=True, text=True)
        return out.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def sleep_checked(seconds, procs):
    """Sleeps `seconds`, failing early if one of `procs` exits."""
    deadline = time.monotonic() + seconds
    while True:
        for p in procs:
            if not p.alive():
                raise BenchError("%s exited early\n%s" % (p.name, p.describe()))
        left = deadline - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(left, 0.2))
