"""What the bench/ scenario scripts share (idle_peers.py, peering.py, slow_consumer.py).

Python 3 standard library only. Each script does:

    args = benchlib.parse_args("idle_peers", description, [options...])
    with benchlib.Run("idle_peers", args) as run:    # results dir, header, cleanup
        bins = run.build("broker-node", "broker-throughput")
        node = run.start(bins["broker-node"], [...], "receiver")
        port = node.listening_port()
        ...
        run.table(header, rows)                      # printed and kept in the report
        run.plot("idle_peers.png", gnuplot_script, {"cpu.dat": lines})

What it takes care of:
  - Building: BUILD_DIR (default <repo>/build-bench, Release) is configured if needed and
    the targets are built with ninja; NO_BUILD=1 uses the binaries as they are.
  - Processes: Run.start() gives a Proc of the shared test helpers
    (tests/lib/brokertest/procs.py): output collected line by line, bounded waits, stopped
    when the script ends, however it ends (exception, SIGINT, SIGTERM, SIGHUP), and
    SIGKILLed by the kernel if the script itself is killed (setpriv --pdeathsig).
  - /proc: CPU seconds (utime + stime of all threads) and resident memory of a pid.
  - Reporting: the machine, the source revision and `uptime` at start and end go to stdout
    and to <BUILD_DIR>/bench-results/<scenario>-<stamp>.md; raw numbers to a .json file
    beside it; plots to PLOT_DIR (default: the same directory).
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The shared helpers of tests/ and bench/ (the scripts import from it too).
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))

from brokertest import procs  # noqa: E402
from brokertest.checks import TestFailure  # noqa: E402

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# Lines of stdout/stderr kept per process (for error messages and lines_since()).
KEEP_LINES = 2000

# A scenario could not run (a process died, a line never came): what the shared process
# helpers raise.
BenchError = TestFailure


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
        procs.exit_on_signals()
        self._install_deps()
        self.header()
        return self

    def __exit__(self, exc_type, exc, tb):
        procs.kill_all()
        if exc_type is None:
            self.say("")
            self.say("# load at end: %s" % uptime_line())
            self.say("# took %.0f s; report: %s" % (time.monotonic() - self.started,
                                                    self.report_path))
        elif exc_type is not None and issubclass(exc_type, BenchError):
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
        # Tools (a source directory of their own) are <build>/<name>/<name>, the bench/
        # programs <build>/bench/<name>.
        paths = {t: os.path.join(self.build_dir, t, t) if os.path.isdir(os.path.join(REPO, t))
                 else os.path.join(self.build_dir, "bench", t) for t in targets}
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

    def start(self, binary, args, name, env=None, kind=procs.Proc, **options):
        """A started process of `kind` (procs.Proc, or nodes.Node for a broker-node that is
        ready when this returns) whose output also goes to the run's log directory."""
        return kind(binary, args, name, env=env, keep=KEEP_LINES, log_dir=self.log_dir,
                    **options)

    # -- plots ----------------------------------------------------------------------------

    def plot(self, png_name, size, script, data_files):
        """Writes `data_files` ({name: [lines]}) and runs `script` with gnuplot in the plot
        directory, drawing a PNG of `size` (width, height). Returns the PNG path, or None
        without gnuplot."""
        gnuplot = shutil.which("gnuplot")
        png = os.path.join(self.plot_dir, png_name)
        work = os.path.join(self.log_dir, "plot")
        os.makedirs(work, exist_ok=True)
        for name, lines in data_files.items():
            with open(os.path.join(work, name), "w") as f:
                f.write("\n".join(lines) + "\n")
        script_path = os.path.join(work, png_name + ".gp")
        with open(script_path, "w") as f:
            f.write('set terminal pngcairo size %d,%d font "sans,10" noenhanced\n' % size)
            f.write('set output "%s"\n' % png)
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


def plot_list(items):
    """gnuplot's comma-separated list (of plot series), one item a line."""
    return ", \\\n     ".join(items)


def run_main(main):
    """Runs a scenario's main(); exits 1 after a BenchError (Run has printed it)."""
    try:
        main()
    except BenchError:
        sys.exit(1)


def wait_listening(proc, port, timeout=15.0):
    """Waits until something accepts on 127.0.0.1:port; fails if `proc` exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not proc.alive():
            raise BenchError("%s exited\n%s" % (proc.name, proc.describe()))
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise BenchError("%s: nothing listens on port %d\n%s" % (proc.name, port, proc.describe()))


def sleep_checked(seconds, processes):
    """Sleeps `seconds`, failing early if one of `processes` exits."""
    deadline = time.monotonic() + seconds
    while True:
        for p in processes:
            if not p.alive():
                raise BenchError("%s exited early\n%s" % (p.name, p.describe()))
        left = deadline - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(left, 0.2))
