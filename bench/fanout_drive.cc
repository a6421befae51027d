// fanout-drive's parent process (fanout_drive.hh): the publisher, the phases, the CPU and
// memory readings, the RESULT line. main() and the /proc readers: fanout_drive_main.cc.

#include "fanout_conn.hh"

#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <vector>

namespace fanout {

namespace {

constexpr uint64_t pub_tag = 0, notify_tag = 1, timer_tag = 2;
constexpr size_t publisher_buffer_limit = 64 * 1024;

enum class phase { connecting, idle, latency, latency_drain, throughput, throughput_drain,
                   ingest_drain, done };

class parent {
public:
  explicit parent(const drive_options& o) : o_(o), pub_(o, false) {}

  int run() {
    if (o_.server_pid)
      rss_start_ = process_memory_kib(o_.server_pid, "VmRSS");
    if (!spawn_children())
      return 1;
    ep_ = ::epoll_create1(EPOLL_CLOEXEC);
    timer_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    watch(ep_, notify_, notify_tag);
    watch(ep_, timer_, timer_tag);
    if (!pub_.open(o_, ep_, pub_tag))
      return fail("publisher: " + pub_.error);
    deadline_ = now_ns() + static_cast<uint64_t>(o_.timeout * 1e9);
    connect_started_ = now_ns();
    std::vector<epoll_event> events(16);
    while (phase_ != phase::done) {
      if (now_ns() > deadline_)
        return fail(std::string{"timeout in phase "} + std::to_string(static_cast<int>(phase_)));
      auto n = ::epoll_wait(ep_, events.data(), static_cast<int>(events.size()),
                            can_publish() ? 0 : 100);
      for (int i = 0; i < n && phase_ != phase::done; ++i) {
        switch (events[i].data.u64) {
          case pub_tag:
            if (!on_publisher(events[i].events))
              return fail("publisher: " + pub_.error);
            break;
          case notify_tag:
            drain(notify_);
            if (!on_progress())
              return 1;
            break;
          case timer_tag:
            on_timer();
            break;
        }
      }
      if (phase_ == phase::throughput)
        pump();
    }
    return exit_code_;
  }

private:
  // -- processes ------------------------------------------------------------------------

  bool spawn_children() {
    notify_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    auto procs = o_.subscribers == 0 ? 0 : std::min(o_.procs, o_.subscribers);
    auto bytes = sizeof(shared_block) + procs * sizeof(child_slot);
    auto mem = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
      return fail("mmap failed") == 0;
    shared_ = new (mem) shared_block;
    slots_ = reinterpret_cast<child_slot*>(static_cast<char*>(mem) + sizeof(shared_block));
    for (size_t p = 0; p < procs; ++p) {
      new (&slots_[p]) child_slot;
      wake_.push_back(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    }
    std::fflush(stdout);
    for (size_t p = 0; p < procs; ++p) {
      auto first = o_.subscribers * p / procs;
      auto last = o_.subscribers * (p + 1) / procs;
      auto pid = ::fork();
      if (pid < 0)
        return fail("fork failed") == 0;
      if (pid == 0)
        run_child(o_, first, last - first, *shared_, slots_[p], wake_[p], notify_);
      children_.push_back(pid);
    }
    return true;
  }

  int64_t children_cpu_ns() const {
    int64_t total = 0;
    for (auto pid : children_)
      total += std::max<int64_t>(0, process_cpu_ns(pid));
    return total;
  }

  void stop_children() {
    shared_->stop.store(1, std::memory_order_release);
    for (auto fd : wake_)
      poke(fd);
    for (auto pid : children_) {
      int status = 0;
      ::waitpid(pid, &status, 0);
    }
    children_.clear();
  }

  // -- events ---------------------------------------------------------------------------

  bool on_publisher(uint32_t what) {
    if (!pub_.connected) {
      if (!(what & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
        return true;
      if (!pub_.on_connected())
        return false;
    }
    if (what & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
      if (!pub_.read_some(scratch_, [](std::string_view) {}))
        return false;
      if (!pub_.ready && pub_.w.event == wire_event::ready) {
        pub_.ready = true;
        maybe_all_ready();
      }
    }
    if (pub_.pending_out() > 0 || pub_.polling_out)
      return pub_.flush(ep_, pub_tag);
    return true;
  }

  size_t subscribers_ready() const {
    size_t n = 0;
    for (size_t p = 0; p < wake_.size(); ++p)
      n += slots_[p].ready.load(std::memory_order_acquire);
    return n;
  }

  bool on_progress() {
    for (size_t p = 0; p < wake_.size(); ++p)
      if (slots_[p].failed.load(std::memory_order_acquire))
        return fail(slots_[p].error) == 0;
    if (phase_ == phase::connecting) {
      maybe_all_ready();
      return true;
    }
    if (phase_ == phase::latency_drain || phase_ == phase::throughput
        || phase_ == phase::throughput_drain) {
      for (size_t p = 0; p < wake_.size(); ++p)
        if (slots_[p].reached.load(std::memory_order_acquire) < checkpoint_)
          return true;
      on_checkpoint();
    }
    return true;
  }

  void maybe_all_ready() {
    if (phase_ != phase::connecting || !pub_.ready || subscribers_ready() < o_.subscribers)
      return;
    std::fprintf(stderr, "# %zu subscribers connected in %.2f s\n", o_.subscribers,
                 static_cast<double>(now_ns() - connect_started_) / 1e9);
    if (o_.server_pid)
      rss_connected_ = process_memory_kib(o_.server_pid, "VmRSS");
    if (o_.idle > 0) {
      phase_ = phase::idle;
      arm_timer(static_cast<uint64_t>(o_.idle * 1e9), 0);
      return;
    }
    start_latency_phase();
  }

  void on_timer() {
    uint64_t expirations = 0;
    if (::read(timer_, &expirations, sizeof expirations) != sizeof expirations)
      return;
    switch (phase_) {
      case phase::idle:
        if (o_.server_pid)
          rss_connected_ = process_memory_kib(o_.server_pid, "VmRSS");
        finish();
        break;
      case phase::latency:
        for (uint64_t i = 0; i < expirations && latency_sent_ < latency_total_; ++i) {
          publish(kind::latency);
          ++latency_sent_;
        }
        flush_publisher();
        if (latency_sent_ == latency_total_) {
          arm_timer(0, 0);
          phase_ = phase::latency_drain;
          set_checkpoint(seq_);
        }
        break;
      case phase::ingest_drain:
        check_ingest_drained();
        break;
      default:
        break;
    }
  }

  // -- phases ---------------------------------------------------------------------------

  void start_latency_phase() {
    auto rate = o_.latency_rate;
    latency_total_ = static_cast<uint64_t>(rate * o_.latency_seconds + 0.5);
    if (latency_total_ == 0 || o_.subscribers == 0) {
      start_throughput_phase();
      return;
    }
    phase_ = phase::latency;
    auto interval = static_cast<uint64_t>(1e9 / rate);
    arm_timer(interval, interval);
  }

  void start_throughput_phase() {
    phase_ = phase::throughput;
    base_ = seq_;
    first_throughput_seq_ = seq_ + 1;
    mark_cpu();
    throughput_start_ns_ = now_ns();
    throughput_end_ns_ = throughput_start_ns_ + static_cast<uint64_t>(o_.seconds * 1e9);
    if (o_.subscribers > 0)
      set_checkpoint(base_ + step());
    pump();
  }

  size_t step() const { return std::max<size_t>(1, o_.window / 2); }

  /// Whether pump() would publish more now (then the loop must not sleep).
  bool can_publish() const {
    return phase_ == phase::throughput && pub_.pending_out() == 0
           && (o_.subscribers == 0 || seq_ < base_ + o_.window);
  }

  void pump() {
    auto now = now_ns();
    if (now < throughput_end_ns_) {
      auto limit = o_.subscribers == 0 ? UINT64_MAX : base_ + o_.window;
      while (pub_.pending_out() < publisher_buffer_limit && seq_ < limit) {
        auto n = std::min<uint64_t>(o_.burst, limit - seq_);
        for (uint64_t i = 0; i < n; ++i)
          publish(kind::throughput);
      }
      flush_publisher();
      return;
    }
    sent_ = seq_ - first_throughput_seq_ + 1;
    flush_publisher();
    if (o_.subscribers == 0) {
      phase_ = phase::ingest_drain;
      quiet_since_cpu_ = o_.server_pid ? process_cpu_ns(o_.server_pid) : 0;
      arm_timer(50'000'000, 50'000'000);
      return;
    }
    phase_ = phase::throughput_drain;
    set_checkpoint(seq_);
  }

  /// Ingest: the server has taken everything in once its CPU stays below 5 % for 100 ms
  /// and the publisher's socket is empty.
  void check_ingest_drained() {
    auto cpu = o_.server_pid ? process_cpu_ns(o_.server_pid) : 0;
    if (pub_.pending_out() == 0 && cpu - quiet_since_cpu_ < 2'500'000) {
      if (++quiet_ticks_ >= 2) {
        last_delivery_ns_ = now_ns();
        delivered_ = sent_;
        finish();
        return;
      }
    } else {
      quiet_ticks_ = 0;
    }
    quiet_since_cpu_ = cpu;
  }

  void set_checkpoint(uint64_t cp) {
    checkpoint_ = cp;
    shared_->checkpoint.store(cp, std::memory_order_release);
    for (auto fd : wake_)
      poke(fd);
    on_progress();
  }

  void on_checkpoint() {
    switch (phase_) {
      case phase::latency_drain:
        start_throughput_phase();
        break;
      case phase::throughput:
        base_ = checkpoint_;
        set_checkpoint(base_ + step());
        break;
      case phase::throughput_drain:
        finish();
        break;
      default:
        break;
    }
  }

  void mark_cpu() {
    server_cpu0_ = o_.server_pid ? process_cpu_ns(o_.server_pid) : 0;
    self_cpu0_ = process_cpu_ns(::getpid());
    children_cpu0_ = children_cpu_ns();
  }

  void finish() {
    auto server_cpu = o_.server_pid ? process_cpu_ns(o_.server_pid) - server_cpu0_ : 0;
    auto self_cpu = process_cpu_ns(::getpid()) - self_cpu0_;
    auto children_cpu = children_cpu_ns() - children_cpu0_;
    auto hwm = o_.server_pid ? process_memory_kib(o_.server_pid, "VmHWM") : 0;
    phase_ = phase::done;
    stop_children();
    run_result r;
    uint64_t delivered = delivered_, lost = 0, last = last_delivery_ns_;
    for (size_t p = 0; p < wake_.size(); ++p) {
      auto& s = slots_[p];
      delivered += s.delivered;
      lost += s.lost;
      last = std::max(last, s.last_delivery_ns);
      using sparse = std::vector<std::pair<uint64_t, uint64_t>>;
      r.latency.add_sparse(sparse(s.latency, s.latency + s.latency_used), s.latency_max);
      r.loaded.add_sparse(sparse(s.loaded, s.loaded + s.loaded_used), s.loaded_max);
    }
    auto seconds = last > throughput_start_ns_
                     ? static_cast<double>(last - throughput_start_ns_) / 1e9 : 0.0;
    auto us = [](uint64_t ns) { return static_cast<double>(ns) / 1000.0; };
    bool idle = o_.idle > 0;
    bool complete = idle || (lost == 0 && (o_.subscribers == 0 || delivered == sent_ * o_.subscribers));
    std::printf("RESULT system=%s mode=%s N=%zu procs=%zu phase=%s sent=%llu delivered=%llu "
                "lost=%llu seconds=%.3f rate=%.0f window=%zu lat_rate=%.0f lat_samples=%llu "
                "p50_us=%.1f p99_us=%.1f load_p50_us=%.1f load_p99_us=%.1f server_cpu_s=%.4f "
                "driver_cpu_s=%.4f publisher_cpu_s=%.4f server_rss_start_kb=%llu "
                "server_rss_connected_kb=%llu server_hwm_kb=%llu complete=%d\n",
                o_.system.c_str(), o_.mode.c_str(), o_.subscribers, wake_.size(),
                idle ? "idle" : (o_.subscribers == 0 ? "ingest" : "fanout"),
                static_cast<unsigned long long>(sent_),
                static_cast<unsigned long long>(delivered), static_cast<unsigned long long>(lost),
                seconds, seconds > 0 ? static_cast<double>(delivered) / seconds : 0.0, o_.window,
                o_.latency_rate, static_cast<unsigned long long>(r.latency.count()),
                us(r.latency.percentile(0.5)), us(r.latency.percentile(0.99)),
                us(r.loaded.percentile(0.5)), us(r.loaded.percentile(0.99)),
                idle ? 0.0 : static_cast<double>(server_cpu) / 1e9,
                idle ? 0.0 : static_cast<double>(self_cpu + children_cpu) / 1e9,
                idle ? 0.0 : static_cast<double>(self_cpu) / 1e9,
                static_cast<unsigned long long>(rss_start_),
                static_cast<unsigned long long>(rss_connected_),
                static_cast<unsigned long long>(hwm), complete ? 1 : 0);
    std::fflush(stdout);
    exit_code_ = complete ? 0 : 1;
  }

  int fail(const std::string& what) {
    std::fprintf(stderr, "error: %s\n", what.c_str());
    std::printf("FAILED system=%s mode=%s N=%zu reason=%s\n", o_.system.c_str(),
                o_.mode.c_str(), o_.subscribers, what.c_str());
    std::fflush(stdout);
    phase_ = phase::done;
    exit_code_ = 1;
    if (shared_ != nullptr) {
      shared_->stop.store(1);
      for (auto pid : children_)
        ::kill(pid, SIGKILL);
      stop_children();
    }
    return 1;
  }

  // -- publishing -----------------------------------------------------------------------

  void publish(kind k) {
    char payload[payload_size];
    format_payload(payload, stamp{now_ns(), ++seq_, k, false});
    pub_.w.publish(payload, pub_.out);
  }

  void flush_publisher() {
    if (!pub_.flush(ep_, pub_tag))
      fail("publisher: " + pub_.error);
  }

  void arm_timer(uint64_t first_ns, uint64_t interval_ns) {
    itimerspec its{};
    its.it_value.tv_sec = static_cast<time_t>(first_ns / 1'000'000'000);
    its.it_value.tv_nsec = static_cast<long>(first_ns % 1'000'000'000);
    its.it_interval.tv_sec = static_cast<time_t>(interval_ns / 1'000'000'000);
    its.it_interval.tv_nsec = static_cast<long>(interval_ns % 1'000'000'000);
    ::timerfd_settime(timer_, 0, &its, nullptr);
  }

  const drive_options& o_;
  connection pub_;
  std::vector<char> scratch_ = std::vector<char>(scratch_size);
  int ep_ = -1, timer_ = -1, notify_ = -1;
  shared_block* shared_ = nullptr;
  child_slot* slots_ = nullptr;
  std::vector<int> wake_;
  std::vector<pid_t> children_;
  phase phase_ = phase::connecting;
  uint64_t seq_ = 0, base_ = 0, checkpoint_ = 0, sent_ = 0, delivered_ = 0;
  uint64_t latency_total_ = 0, latency_sent_ = 0;
  uint64_t first_throughput_seq_ = 0, throughput_start_ns_ = 0, throughput_end_ns_ = 0;
  uint64_t last_delivery_ns_ = 0, connect_started_ = 0, deadline_ = 0;
  int64_t server_cpu0_ = 0, self_cpu0_ = 0, children_cpu0_ = 0, quiet_since_cpu_ = 0;
  int quiet_ticks_ = 0;
  uint64_t rss_start_ = 0, rss_connected_ = 0;
  int exit_code_ = 1;
};

} // namespace

int run_parent(const drive_options& o) {
  parent p{o};
  return p.run();
}

} // namespace fanout
