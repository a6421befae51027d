// broker-store-bench: what data stores cost, through the public API only (doc/performance.md,
// "Data stores").
//
// Two endpoints in one process, peered over loopback TCP: A hosts the master, B a clone.
// Scenarios, each printing one RESULT line:
//   writes   --via master|clone: N puts of 64-byte strings as fast as put() returns, timed
//            until the master (via master) or the clone (via clone) holds all N keys.
//   unique   --via master|clone: N sequential blocking put_unique() calls of one writer.
//   unique-pipelined --via master|clone: N put_unique() through a store::proxy with up to
//            --window requests in flight (one writer, answers read from the proxy).
//   get      --via master|clone: N blocking get() of existing keys; p50/p99 latency.
// --backend memory|sqlite (SQLite: a fresh file in --dir, --synchronous OFF|NORMAL|FULL).
//
// Examples:
//   broker-store-bench --scenario writes --via clone --backend sqlite --synchronous FULL -n 100000
//   broker-store-bench --scenario unique --via clone -n 20000

#include <broker/endpoint.hh>
#include <broker/store.hh>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

namespace {

using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct options {
  std::string scenario = "writes";
  std::string via = "master";
  std::string backend = "memory";
  std::string synchronous = "NORMAL";
  std::string dir = "/tmp";
  size_t n = 50000;
  size_t window = 256;
};

[[noreturn]] void usage(const char* self) {
  std::fprintf(stderr,
               "usage: %s [--scenario writes|unique|unique-pipelined|get] [--via master|clone]\n"
               "          [--backend memory|sqlite] [--synchronous OFF|NORMAL|FULL]\n"
               "          [--dir DIR] [-n N] [--window W]\n",
               self);
  std::exit(2);
}

options parse(int argc, char** argv) {
  options opts;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        usage(argv[0]);
      return argv[++i];
    };
    if (arg == "--scenario")
      opts.scenario = value();
    else if (arg == "--via")
      opts.via = value();
    else if (arg == "--backend")
      opts.backend = value();
    else if (arg == "--synchronous")
      opts.synchronous = value();
    else if (arg == "--dir")
      opts.dir = value();
    else if (arg == "-n")
      opts.n = std::strtoull(value().c_str(), nullptr, 10);
    else if (arg == "--window")
      opts.window = std::strtoull(value().c_str(), nullptr, 10);
    else
      usage(argv[0]);
  }
  if (opts.n == 0 || opts.window == 0 || (opts.via != "master" && opts.via != "clone")
      || (opts.backend != "memory" && opts.backend != "sqlite"))
    usage(argv[0]);
  return opts;
}

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "broker-store-bench: %s\n", what.c_str());
  std::exit(1);
}

broker::configuration quiet_config() {
  broker::configuration cfg;
  cfg.set("broker.log-level", std::getenv("STORE_BENCH_LOG") ? std::getenv("STORE_BENCH_LOG") : "error");
  cfg.set_bool("broker.disable-ssl", true);
  cfg.set_count("broker.store.master-probe-timeout", 0);
  return cfg;
}

long peak_rss_kib() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr)
    return -1;
  char line[256];
  long result = -1;
  while (std::fgets(line, sizeof(line), f) != nullptr)
    if (std::strncmp(line, "VmHWM:", 6) == 0)
      result = std::strtol(line + 6, nullptr, 10);
  std::fclose(f);
  return result;
}

} // namespace

int main(int argc, char** argv) {
  auto opts = parse(argc, argv);
  broker::endpoint a{quiet_config()}, b{quiet_config()};
  auto port = a.listen("127.0.0.1", 0);
  if (!port || !b.peer("127.0.0.1", *port, 0s))
    fail("cannot peer the two endpoints");
  broker::backend_options bopts;
  std::string path;
  auto kind = broker::backend::memory;
  if (opts.backend == "sqlite") {
    kind = broker::backend::sqlite;
    path = opts.dir + "/broker-store-bench-" + std::to_string(::getpid()) + ".db";
    std::filesystem::remove(path);
    bopts = {{"path", path}, {"synchronous", opts.synchronous}};
  }
  auto master = a.attach_master("bench", kind, bopts);
  if (!master)
    fail("attach_master: " + to_string(master.error_value()));
  auto clone = b.attach_clone("bench");
  if (!clone || !clone->await_ready(10s))
    fail("the clone did not synchronize");
  auto& via = opts.via == "master" ? *master : *clone;
  std::string payload(64, 'x');
  double secs = 0;
  std::string extra;
  if (opts.scenario == "writes") {
    auto t0 = clock_type::now();
    for (size_t i = 0; i < opts.n; ++i)
      if (auto err = via.put(broker::count{i}, payload))
        fail("put: " + to_string(err));
    // Done when the writing side holds the last key (writes apply in order).
    auto last = broker::data{broker::count{opts.n - 1}};
    for (;;) {
      auto x = via.get(last);
      if (x)
        break;
      if (seconds_since(t0) > 300)
        fail("writes did not arrive");
      std::this_thread::sleep_for(1ms);
    }
    secs = seconds_since(t0);
  } else if (opts.scenario == "unique") {
    auto t0 = clock_type::now();
    size_t inserted = 0;
    for (size_t i = 0; i < opts.n; ++i) {
      auto x = via.put_unique(broker::count{i}, payload);
      if (!x)
        fail("put_unique: " + to_string(x.error_value()));
      inserted += *x ? 1 : 0;
    }
    secs = seconds_since(t0);
    extra = " inserted=" + std::to_string(inserted);
  } else if (opts.scenario == "unique-pipelined") {
    broker::store::proxy px{via};
    auto t0 = clock_type::now();
    size_t sent = 0, received = 0, inserted = 0;
    while (received < opts.n) {
      while (sent < opts.n && sent - received < opts.window) {
        px.put_unique(broker::count{sent}, payload);
        ++sent;
      }
      auto r = px.receive();
      if (!r.answer)
        fail("put_unique: " + to_string(r.answer.error_value()));
      inserted += broker::get<bool>(*r.answer) ? 1 : 0;
      ++received;
    }
    secs = seconds_since(t0);
    extra = " inserted=" + std::to_string(inserted);
  } else if (opts.scenario == "get") {
    size_t keys = std::min<size_t>(opts.n, 10000);
    for (size_t i = 0; i < keys; ++i)
      master->put(broker::count{i}, payload);
    auto last = broker::data{broker::count{keys - 1}};
    while (!via.get(last))
      std::this_thread::sleep_for(1ms);
    std::vector<double> lat;
    lat.reserve(opts.n);
    auto t0 = clock_type::now();
    for (size_t i = 0; i < opts.n; ++i) {
      auto s = clock_type::now();
      auto x = via.get(broker::count{i % keys});
      lat.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - s).count());
      if (!x)
        fail("get: " + to_string(x.error_value()));
    }
    secs = seconds_since(t0);
    std::sort(lat.begin(), lat.end());
    char buf[128];
    std::snprintf(buf, sizeof(buf), " p50_us=%.1f p99_us=%.1f", lat[lat.size() / 2],
                  lat[lat.size() * 99 / 100]);
    extra = buf;
  } else {
    usage(argv[0]);
  }
  std::printf("RESULT scenario=%s via=%s backend=%s synchronous=%s n=%zu seconds=%.3f "
              "ops_per_s=%.0f%s peak_rss_kib=%ld\n",
              opts.scenario.c_str(), opts.via.c_str(), opts.backend.c_str(),
              opts.backend == "sqlite" ? opts.synchronous.c_str() : "-", opts.n, secs,
              static_cast<double>(opts.n) / secs, extra.c_str(), peak_rss_kib());
  b.shutdown();
  a.shutdown();
  if (!path.empty()) {
    std::filesystem::remove(path);
    std::filesystem::remove(path + "-wal");
    std::filesystem::remove(path + "-shm");
  }
  return 0;
}
