#include "report.hh"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sys/resource.h>

namespace broker_throughput {

namespace {

constexpr double ns_per_us = 1000.0;

std::string fixed(double x, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, x);
  return buf;
}

/// `text` as a JSON string literal (only what a host name could smuggle in needs care).
std::string json_string(std::string_view text) {
  std::string result = "\"";
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      result += '\\';
      result += ch;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      result += buf;
    } else {
      result += ch;
    }
  }
  result += '"';
  return result;
}

const char* role_name(role x) {
  return x == role::server ? "server" : "client";
}

const char* transport_name(transport x) {
  return x == transport::web_socket ? "web-socket" : "peering";
}

/// The sample at percentile `p` (0 < p <= 1) by nearest rank. Pre: `sorted` not empty.
int64_t nearest_rank(const std::vector<int64_t>& sorted, double p) {
  auto rank = static_cast<size_t>(std::ceil(p * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

/// User plus system CPU time of the whole process (all threads) so far.
double process_cpu_seconds() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0)
    return 0;
  auto seconds = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

double rate_of(uint64_t events, double seconds) {
  return seconds > 0 ? static_cast<double>(events) / seconds : 0.0;
}

} // namespace

void print_line(std::string_view line) {
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

void print_diagnostic(std::string_view line) {
  std::fprintf(stderr, "broker-throughput: %.*s\n", static_cast<int>(line.size()),
               line.data());
}

// -- latency_recorder -------------------------------------------------------------------

void latency_recorder::add(broker::timespan sample) {
  samples_.push_back(std::max<int64_t>(sample.count(), 0));
}

latency_summary latency_recorder::summarize(std::string method) {
  latency_summary result;
  result.method = std::move(method);
  result.samples = samples_.size();
  if (samples_.empty())
    return result;
  std::sort(samples_.begin(), samples_.end());
  auto us = [](int64_t ns) { return static_cast<double>(ns) / ns_per_us; };
  result.p50_us = us(nearest_rank(samples_, 0.50));
  result.p99_us = us(nearest_rank(samples_, 0.99));
  result.p999_us = us(nearest_rank(samples_, 0.999));
  result.max_us = us(samples_.back());
  return result;
}

// -- reporter ---------------------------------------------------------------------------

reporter::reporter(const throughput_options& opts) : opts_(opts) {
}

void reporter::listening(uint16_t port) const {
  if (opts_.json)
    print_line("{\"type\":\"listening\",\"port\":" + std::to_string(port) + "}");
  else
    print_line("listening on " + std::to_string(port));
}

void reporter::connected(const std::string& url) const {
  if (opts_.json)
    print_line("{\"type\":\"connected\",\"url\":" + json_string(url) + "}");
  else
    print_line("connected to " + url);
}

void reporter::rate(uint64_t events, double interval_s, double time_s) const {
  auto per_second = rate_of(events, interval_s);
  if (opts_.json)
    print_line(std::string{"{\"type\":\"rate\",\"role\":\""} + role_name(opts_.mode)
               + "\",\"time\":" + fixed(time_s, 3) + ",\"events\":" + std::to_string(events)
               + ",\"rate\":" + fixed(per_second, 1) + "}");
  else
    print_line("rate: " + fixed(per_second, 0) + " events/s");
}

void reporter::summary(const run_summary& result) const {
  auto mean = rate_of(result.events, result.seconds);
  auto cpu = process_cpu_seconds();
  const auto* lat = result.latency ? &*result.latency : nullptr;
  if (!opts_.json) {
    auto line = "summary: events=" + std::to_string(result.events)
                + " duration=" + fixed(result.seconds, 3) + "s rate=" + fixed(mean, 0)
                + " events/s cpu=" + fixed(cpu, 2) + "s";
    if (result.dropped)
      line += " dropped=" + std::to_string(*result.dropped);
    print_line(line);
    if (lat)
      print_line("latency: p50=" + fixed(lat->p50_us, 1) + "us p99=" + fixed(lat->p99_us, 1)
                 + "us p99.9=" + fixed(lat->p999_us, 1) + "us max=" + fixed(lat->max_us, 1)
                 + "us samples=" + std::to_string(lat->samples) + " (" + lat->method + ")");
    return;
  }
  std::string line = std::string{"{\"type\":\"summary\",\"role\":\""} + role_name(opts_.mode)
                     + "\",\"transport\":\"" + transport_name(opts_.via)
                     + "\"";
  // What the client sent is its choice; a server counts whatever arrives.
  if (opts_.mode == role::client)
    line += ",\"event_type\":" + std::to_string(opts_.event_type)
            + ",\"batch_size\":" + std::to_string(opts_.batch_size)
            + ",\"batch_rate\":" + std::to_string(opts_.batch_rate);
  line += ",\"events\":" + std::to_string(result.events)
          + ",\"duration\":" + fixed(result.seconds, 6) + ",\"rate\":" + fixed(mean, 1)
          + ",\"cpu\":" + fixed(cpu, 3);
  if (result.dropped)
    line += ",\"dropped\":" + std::to_string(*result.dropped);
  if (lat)
    line += ",\"latency\":{\"method\":\"" + lat->method
            + "\",\"samples\":" + std::to_string(lat->samples)
            + ",\"p50_us\":" + fixed(lat->p50_us, 1) + ",\"p99_us\":" + fixed(lat->p99_us, 1)
            + ",\"p99_9_us\":" + fixed(lat->p999_us, 1)
            + ",\"max_us\":" + fixed(lat->max_us, 1) + "}";
  line += "}";
  print_line(line);
}

} // namespace broker_throughput
