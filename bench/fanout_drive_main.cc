// fanout-drive's command line (fanout_drive.hh) and its /proc readers.

#include "fanout_drive.hh"

#include <dirent.h>
#include <sys/resource.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace fanout {

int64_t process_cpu_ns(int pid) {
  auto dir = "/proc/" + std::to_string(pid) + "/task";
  auto d = ::opendir(dir.c_str());
  if (d == nullptr)
    return -1;
  int64_t total = 0;
  while (auto e = ::readdir(d)) {
    if (e->d_name[0] == '.')
      continue;
    std::ifstream f{dir + "/" + e->d_name + "/schedstat"};
    int64_t ns = 0;
    if (f >> ns)
      total += ns;
  }
  ::closedir(d);
  return total;
}

uint64_t process_memory_kib(int pid, const char* key) {
  std::ifstream f{"/proc/" + std::to_string(pid) + "/status"};
  std::string line;
  auto prefix = std::string{key} + ":";
  while (std::getline(f, line))
    if (line.compare(0, prefix.size(), prefix) == 0)
      return std::strtoull(line.c_str() + prefix.size(), nullptr, 10);
  return 0;
}

namespace {

const char* usage_text =
  "usage: fanout-drive --system ws|redis|nats --port P [--variant V] [--host H]\n"
  "         [--subscribers N] [--procs P] [--seconds S] [--latency-rate R]\n"
  "         [--latency-seconds S] [--window W] [--burst B] [--connect-parallel C]\n"
  "         [--server-pid PID] [--idle S] [--timeout S]\n"
  "One publisher (this process) and N subscriber connections (in P child processes,\n"
  "default 1) measure fan-out from the server at H:P (default 127.0.0.1): a latency phase\n"
  "at R messages/s (default 1000, at most 20000/N) for S s (default 1), then S seconds\n"
  "(default 2) as fast as flow control allows (W messages beyond the slowest subscriber,\n"
  "default 256, at most 256000/N). With --server-pid the RESULT line has the server's CPU\n"
  "over the throughput phase next to the driver's, and the server's RSS before and after\n"
  "the connections and its peak. N = 0: ingest (publish as fast as the server reads, then\n"
  "wait until its CPU goes quiet). --idle S: connect, hold S seconds, report RSS only.\n"
  "Variants: ws: ws; redis: channel (SUBSCRIBE /fanout/data), pattern (PSUBSCRIBE\n"
  "/fanout/*); nats: wildcard (SUB fanout.>), exact (SUB fanout.data).\n"
  "Exit 1 on errors, lost messages or timeout (default 120 s).\n";

[[noreturn]] void usage(int code) {
  std::fputs(usage_text, code == 0 ? stdout : stderr);
  std::exit(code);
}

} // namespace

} // namespace fanout

int main(int argc, char** argv) {
  using namespace fanout;
  drive_options o;
  std::string system, variant;
  auto num = [&](int& i) {
    if (i + 1 >= argc)
      usage(2);
    char* end = nullptr;
    auto x = std::strtod(argv[++i], &end);
    if (*end != '\0' || x < 0)
      usage(2);
    return x;
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h")
      usage(0);
    else if (arg == "--system" && i + 1 < argc)
      system = argv[++i];
    else if (arg == "--variant" && i + 1 < argc)
      variant = argv[++i];
    else if (arg == "--host" && i + 1 < argc)
      o.host = argv[++i];
    else if (arg == "--port")
      o.port = static_cast<uint16_t>(num(i));
    else if (arg == "--subscribers")
      o.subscribers = static_cast<size_t>(num(i));
    else if (arg == "--procs")
      o.procs = std::max<size_t>(1, static_cast<size_t>(num(i)));
    else if (arg == "--seconds")
      o.seconds = num(i);
    else if (arg == "--latency-rate")
      o.latency_rate = num(i);
    else if (arg == "--latency-seconds")
      o.latency_seconds = num(i);
    else if (arg == "--window")
      o.window = static_cast<size_t>(num(i));
    else if (arg == "--burst")
      o.burst = std::max<size_t>(1, static_cast<size_t>(num(i)));
    else if (arg == "--connect-parallel")
      o.connect_parallel = std::max<size_t>(1, static_cast<size_t>(num(i)));
    else if (arg == "--server-pid")
      o.server_pid = static_cast<int>(num(i));
    else if (arg == "--idle")
      o.idle = num(i);
    else if (arg == "--timeout")
      o.timeout = num(i);
    else
      usage(2);
  }
  if (system == "ws" || system == "broker") {
    o.proto = protocol::ws;
    o.system = "broker";
    o.mode = "ws";
    if (!variant.empty() && variant != "ws")
      usage(2);
  } else if (system == "redis") {
    o.proto = protocol::redis;
    o.system = "redis";
    o.mode = variant.empty() ? "pattern" : variant;
    if (o.mode != "pattern" && o.mode != "channel")
      usage(2);
    o.variant_b = o.mode == "pattern";
  } else if (system == "nats") {
    o.proto = protocol::nats;
    o.system = "nats";
    o.mode = variant.empty() ? "wildcard" : variant;
    if (o.mode != "wildcard" && o.mode != "exact")
      usage(2);
    o.variant_b = o.mode == "exact";
  } else {
    usage(2);
  }
  if (o.port == 0)
    usage(2);
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0) {
    lim.rlim_cur = lim.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }
  if (o.latency_rate == 0)
    o.latency_rate = o.subscribers == 0 ? 0 : default_latency_rate(o.subscribers);
  if (o.window == 0)
    o.window = default_window(o.subscribers);
  o.burst = std::min(o.burst, o.window);
  ::signal(SIGPIPE, SIG_IGN);
  return run_parent(o);
}
