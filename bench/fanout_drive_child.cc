// fanout-drive's subscriber processes (fanout_drive.hh): connect a slice of the N
// subscribers, count and time every delivery, report progress through the shared block.

#include "fanout_conn.hh"

#include <sys/epoll.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>

#include <cstdio>
#include <memory>
#include <vector>

namespace fanout {

namespace {

constexpr uint64_t wake_tag = ~uint64_t{0};

class child {
public:
  child(const drive_options& o, size_t first, size_t count, shared_block& shared,
        child_slot& slot, int wake_fd, int notify_fd)
    : o_(o), first_(first), shared_(shared), slot_(slot), wake_fd_(wake_fd),
      notify_fd_(notify_fd) {
    subs_.reserve(count);
    for (size_t i = 0; i < count; ++i)
      subs_.push_back(std::make_unique<connection>(o, true));
  }

  void run() {
    ep_ = ::epoll_create1(EPOLL_CLOEXEC);
    watch(ep_, wake_fd_, wake_tag);
    connect_more();
    std::vector<epoll_event> events(256);
    while (shared_.stop.load(std::memory_order_acquire) == 0) {
      auto n = ::epoll_wait(ep_, events.data(), static_cast<int>(events.size()), 200);
      for (int i = 0; i < n; ++i) {
        if (events[i].data.u64 == wake_tag) {
          drain(wake_fd_);
          continue;
        }
        auto& c = *subs_[events[i].data.u64];
        if (!handle(c, events[i].events, events[i].data.u64)) {
          fail(c, events[i].data.u64);
          return;
        }
      }
      auto cp = shared_.checkpoint.load(std::memory_order_acquire);
      if (cp != checkpoint_)
        set_checkpoint(cp);
    }
    finish();
  }

private:
  bool handle(connection& c, uint32_t what, uint64_t tag) {
    if (!c.connected) {
      if (!(what & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
        return true;
      if (!c.on_connected())
        return false;
    }
    if (what & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
      now_ = now_ns();
      if (!c.read_some(scratch_, [&](std::string_view p) { deliver(c, p); }))
        return false;
      if (!c.error.empty())
        return false;
      if (!c.ready && c.w.event == wire_event::ready) {
        c.ready = true;
        --connecting_;
        slot_.ready.fetch_add(1, std::memory_order_release);
        if (++ready_ == subs_.size())
          poke(notify_fd_);
        connect_more();
      }
    }
    if (c.pending_out() > 0 || c.polling_out)
      return c.flush(ep_, tag);
    return true;
  }

  /// Throughput messages whose send time is read and recorded (loaded latency): one in
  /// this many (by sequence number); the others cost only their sequence number's check.
  static constexpr uint64_t throughput_sample = 8;

  void deliver(connection& c, std::string_view payload) {
    stamp s;
    bool parsed = fast_parse_seq(payload, s.seq, s.what);
    bool timed = s.what != kind::throughput || s.seq % throughput_sample == 0;
    if (!parsed || (timed && !fast_parse_payload(payload, s))) {
      c.fail("unexpected payload: " + std::string{payload.substr(0, 80)});
      return;
    }
    if (s.seq <= c.last_seq) {
      c.fail("sequence " + std::to_string(s.seq) + " after " + std::to_string(c.last_seq));
      return;
    }
    lost_ += s.seq - c.last_seq - 1;
    auto previous = c.last_seq;
    c.last_seq = s.seq;
    auto delay = now_ > s.sent_ns ? now_ - s.sent_ns : 0;
    if (s.what == kind::latency) {
      latency_.record(delay);
    } else if (s.what == kind::throughput) {
      if (timed)
        loaded_.record(delay);
      ++delivered_;
      last_delivery_ns_ = now_;
    }
    if (previous < checkpoint_ && s.seq >= checkpoint_ && ++reached_ == subs_.size())
      report_reached();
  }

  void set_checkpoint(uint64_t cp) {
    checkpoint_ = cp;
    reached_ = 0;
    for (auto& s : subs_)
      if (s->last_seq >= cp)
        ++reached_;
    if (reached_ == subs_.size())
      report_reached();
  }

  void report_reached() {
    slot_.reached.store(checkpoint_, std::memory_order_release);
    poke(notify_fd_);
  }

  void connect_more() {
    while (next_ < subs_.size() && connecting_ < o_.connect_parallel) {
      ++connecting_;
      auto& c = *subs_[next_];
      if (!c.open(o_, ep_, next_)) {
        fail(c, next_);
        return;
      }
      ++next_;
    }
  }

  void fail(connection& c, uint64_t index) {
    std::snprintf(slot_.error, sizeof slot_.error, "subscriber %zu: %s",
                  static_cast<size_t>(first_ + index), c.error.c_str());
    slot_.failed.store(1, std::memory_order_release);
    poke(notify_fd_);
    finish();
  }

  void finish() {
    slot_.delivered = delivered_;
    slot_.lost = lost_;
    slot_.last_delivery_ns = last_delivery_ns_;
    auto a = latency_.sparse();
    auto b = loaded_.sparse();
    slot_.latency_max = latency_.max();
    slot_.loaded_max = loaded_.max();
    slot_.latency_used = static_cast<uint32_t>(a.size());
    slot_.loaded_used = static_cast<uint32_t>(b.size());
    std::copy(a.begin(), a.end(), slot_.latency);
    std::copy(b.begin(), b.end(), slot_.loaded);
    slot_.done.store(1, std::memory_order_release);
    poke(notify_fd_);
  }

  const drive_options& o_;
  size_t first_;
  shared_block& shared_;
  child_slot& slot_;
  int wake_fd_;
  int notify_fd_;
  int ep_ = -1;
  std::vector<std::unique_ptr<connection>> subs_;
  std::vector<char> scratch_ = std::vector<char>(scratch_size);
  size_t next_ = 0;
  size_t connecting_ = 0;
  size_t ready_ = 0;
  uint64_t checkpoint_ = 0;
  size_t reached_ = 0;
  uint64_t now_ = 0;
  uint64_t delivered_ = 0;
  uint64_t lost_ = 0;
  uint64_t last_delivery_ns_ = 0;
  histogram latency_;
  histogram loaded_;
};

} // namespace

void run_child(const drive_options& o, size_t first, size_t count, shared_block& shared,
               child_slot& slot, int wake_fd, int notify_parent_fd) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL); // Never outlive the parent.
  child c{o, first, count, shared, slot, wake_fd, notify_parent_fd};
  c.run();
  std::fflush(stdout);
  ::_exit(slot.failed.load() ? 1 : 0);
}

} // namespace fanout
