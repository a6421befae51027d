"""Where a process's time goes, per thread and per socket, without slowing it down much:
what bench/seed.py reads around its measurement windows.

    before = threadstats.snapshot(pid)          # /proc/<pid>/stat and task/*/{status,schedstat,comm}
    ...
    d = threadstats.delta(before, threadstats.snapshot(pid))
    d["cpu_s"], d["vol"], d["nonvol"], d["runs"], d["threads"], d["per_thread"]

    threadstats.tcp_info(local_port=PORT)       # `ss -tin` of the connections on PORT
    threadstats.syscall_counts(pid, 2.0, [...]) # `perf stat` of syscall tracepoints
    threadstats.read_sizes(pid, 1.0)            # successful reads and their sizes (perf record)

Counters (Linux, proc(5)):
  - voluntary_ctxt_switches: the thread blocked (it slept in epoll_wait, futex, read...);
    each one is followed by a wake-up, so their sum is the process's wake-ups;
  - nonvoluntary_ctxt_switches: the thread was preempted while runnable;
  - schedstat field 3: how often the thread was put on a CPU (wake-ups + resumptions
    after preemption);
  - utime + stime of /proc/<pid>/stat: CPU time of all threads (clock ticks).
"""

import collections
import os
import re
import shutil
import statistics
import subprocess

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _read(path):
    with open(path) as f:
        return f.read()


def snapshot(pid):
    """Counters of process `pid` and of each of its threads, now."""
    fields = _read("/proc/%d/stat" % pid).rsplit(")", 1)[1].split()
    result = {"cpu_s": (int(fields[11]) + int(fields[12])) / CLOCK_TICKS, "tasks": {},
              "pid": str(pid)}
    base = "/proc/%d/task" % pid
    for tid in os.listdir(base):
        try:
            status = _read("%s/%s/status" % (base, tid))
            sched = _read("%s/%s/schedstat" % (base, tid)).split()
            comm = _read("%s/%s/comm" % (base, tid)).strip()
        except OSError:  # The thread ended meanwhile.
            continue
        vol = int(re.search(r"^voluntary_ctxt_switches:\s*(\d+)", status, re.M).group(1))
        nonvol = int(re.search(r"^nonvoluntary_ctxt_switches:\s*(\d+)", status, re.M).group(1))
        result["tasks"][tid] = {"comm": comm, "vol": vol, "nonvol": nonvol,
                                "runs": int(sched[2]), "cpu_ns": int(sched[0])}
    return result


def delta(before, after):
    """What happened between two snapshots of one process. Threads that started in between
    count from zero; per_thread lists (comm, vol, nonvol, runs, cpu_s) by descending vol."""
    per_thread = []
    for tid, a in after["tasks"].items():
        b = before["tasks"].get(tid, {"vol": 0, "nonvol": 0, "runs": 0, "cpu_ns": 0})
        name = a["comm"] + ("(main)" if tid == after["pid"] else "")
        per_thread.append((name, a["vol"] - b["vol"], a["nonvol"] - b["nonvol"],
                           a["runs"] - b["runs"], (a["cpu_ns"] - b["cpu_ns"]) / 1e9))
    per_thread.sort(key=lambda t: -t[1])
    return {"cpu_s": after["cpu_s"] - before["cpu_s"],
            "vol": sum(t[1] for t in per_thread), "nonvol": sum(t[2] for t in per_thread),
            "runs": sum(t[3] for t in per_thread), "threads": len(after["tasks"]),
            "per_thread": per_thread}


def thread_summary(per_thread, events, threshold=0.05):
    """'name vol/ev (cpu us/ev), ...' for the threads that woke at least `threshold` times
    per event; and how many did."""
    busy = [t for t in per_thread if events and t[1] / events >= threshold]
    text = ", ".join("%s %.2f (%.1f µs)" % (t[0], t[1] / events, 1e6 * t[4] / events)
                     for t in busy)
    return len(busy), text


# -- sockets ------------------------------------------------------------------------------

_TCP_FIELDS = ("bytes_received", "bytes_acked", "segs_in", "segs_out", "data_segs_in",
               "data_segs_out")


def tcp_info(local_port=None, remote_port=None):
    """[{field: int}] from `ss -tin` for the established TCP connections whose local (or
    remote) port is the given one; bytes_acked is what the local side sent."""
    filt = "sport = :%d" % local_port if local_port else "dport = :%d" % remote_port
    out = subprocess.run(["ss", "-tinH", "state", "established", filt],
                         capture_output=True, text=True).stdout
    result, current = [], None
    for line in out.splitlines():
        if not line.startswith((" ", "\t")):
            current = {}
            result.append(current)
            continue
        for name in _TCP_FIELDS:
            m = re.search(r"\b%s:(\d+)" % name, line)
            if m and current is not None:
                current[name] = int(m.group(1))
    return result


def tcp_delta(before, after):
    """Field-wise difference of the busiest connection of two tcp_info() results."""
    if not before or not after:
        return None
    a = max(after, key=lambda c: c.get("bytes_received", 0) + c.get("bytes_acked", 0))
    b = max(before, key=lambda c: c.get("bytes_received", 0) + c.get("bytes_acked", 0))
    return {k: a.get(k, 0) - b.get(k, 0) for k in _TCP_FIELDS}


# -- system calls ----------------------------------------------------------------------------

READS = ("read", "readv", "recvfrom", "recvmsg")
WRITES = ("write", "writev", "sendto", "sendmsg")
WAITS = ("epoll_wait", "epoll_pwait", "poll", "ppoll", "futex", "nanosleep",
         "clock_nanosleep")


def perf_available():
    """True if `perf stat` can count syscall tracepoints here (root, tracefs)."""
    if not shutil.which("perf"):
        return False
    p = subprocess.run(["perf", "stat", "-x,", "-e", "syscalls:sys_enter_getpid", "true"],
                       capture_output=True, text=True)
    return p.returncode == 0 and "not supported" not in p.stderr and "<not" not in p.stderr


def syscall_counts(pid, seconds, names=READS + WRITES + WAITS):
    """{name: calls} made by all threads of `pid` over `seconds` (perf stat -x,)."""
    events = ",".join("syscalls:sys_enter_" + n for n in names)
    p = subprocess.run(["perf", "stat", "-x,", "-e", events, "-p", str(pid), "--",
                        "sleep", str(seconds)], capture_output=True, text=True)
    counts = {}
    for line in p.stderr.splitlines():
        parts = line.split(",")
        if len(parts) > 2 and parts[2].startswith("syscalls:sys_enter_"):
            try:
                counts[parts[2][len("syscalls:sys_enter_"):]] = int(parts[0])
            except ValueError:
                pass
    return counts


def read_sizes(pid, seconds, workdir):
    """Every read-type system call of `pid`'s threads over `seconds`, recorded with `perf
    record` (tracepoints: the threads are not stopped, unlike under strace): a list of
    (thread name, syscall, fd, result), result < 0 being -errno."""
    data = os.path.join(workdir, "reads.perf")
    events = []
    for n in READS:
        events += ["-e", "syscalls:sys_enter_" + n, "-e", "syscalls:sys_exit_" + n]
    subprocess.run(["perf", "record", "-q", "-o", data] + events
                   + ["-p", str(pid), "--", "sleep", str(seconds)],
                   capture_output=True, text=True)
    out = subprocess.run(["perf", "script", "-i", data, "-F", "comm,tid,event,trace"],
                         capture_output=True, text=True).stdout
    pending, calls = {}, []
    for line in out.splitlines():
        m = re.match(r"\s*(.+?)\s+(\d+)\s+syscalls:sys_(enter|exit)_(\w+):\s*(.*)$", line)
        if not m:
            continue
        comm, tid, kind, name, rest = m.groups()
        if kind == "enter":
            fd = re.search(r"fd: (0x[0-9a-f]+)", rest)
            pending[tid] = (name, int(fd.group(1), 16) if fd else -1)
        elif tid in pending and pending[tid][0] == name:
            ret = int(rest.strip(), 16)
            if ret >= 1 << 63:
                ret -= 1 << 64
            calls.append((comm, name, pending.pop(tid)[1], ret))
    return calls


def read_profile(calls, events):
    """What read_sizes() saw, per event: the busiest descriptor's successful reads and their
    sizes, the reads that found nothing (EAGAIN), the reads of other descriptors (eventfds,
    pipes), and which threads read."""
    if not calls or not events:
        return None
    by_fd = collections.Counter()
    for comm, name, fd, ret in calls:
        if ret > 0:
            by_fd[fd] += ret
    sock = by_fd.most_common(1)[0][0] if by_fd else None
    data = [ret for _, _, fd, ret in calls if fd == sock and ret > 0]
    empty = [ret for _, _, fd, ret in calls if fd == sock and ret <= 0]
    other = [c for c in calls if c[2] != sock]
    threads = collections.Counter("%s/%s" % (c[0], c[1]) for c in calls if c[2] == sock)
    other_threads = collections.Counter("%s/%s" % (c[0], c[1]) for c in other)
    return {"reads_per_event": len(data) / events,
            "empty_reads_per_event": len(empty) / events,
            "other_reads_per_event": len(other) / events,
            "bytes_per_read_median": statistics.median(data) if data else None,
            "bytes_per_read_mean": sum(data) / len(data) if data else None,
            "bytes_per_event": sum(data) / events,
            "socket_readers": ", ".join("%s %d" % kv for kv in threads.most_common(3)),
            "other_readers": ", ".join("%s %d" % kv for kv in other_threads.most_common(3))}
