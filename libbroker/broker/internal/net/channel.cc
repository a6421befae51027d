#include "broker/internal/net/channel.hh"

#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>

#include <cerrno>
#include <sys/socket.h>

namespace asio = boost::asio;

namespace broker::internal {

namespace {

/// TLS reads: the usual size, and the size after a read that filled its buffer.
constexpr size_t tls_read_size = 4 * 1024;
constexpr size_t tls_big_read_size = 16 * 1024;

/// Write buffers above these sizes are given back when the write loop drains.
constexpr size_t max_idle_gather_bytes = 4 * 1024;
constexpr size_t max_idle_ctrl = 64;

/// The I/O thread's read buffer (see the header). Allocated on a thread's first read.
char* thread_buffer() {
  thread_local std::unique_ptr<char[]> buf;
  if (!buf)
    buf.reset(new char[channel::thread_buffer_size]);
  return buf.get();
}

} // namespace

channel::channel(std::unique_ptr<stream> conn, gate* g) : conn_(std::move(conn)), gate_(g) {
}

channel::~channel() = default;

size_t channel::buffer_bytes() const noexcept {
  return rx_.capacity() + ctrl_.capacity() + gather_.capacity()
         + batch_bytes() + tls_buf_.capacity();
}

// -- cross-thread entry points -------------------------------------------------------------

void channel::schedule_write() {
  if (through_ && write_through())
    return;
  post([self = shared_from_this()] { self->write_more(); });
}

void channel::resume_input() {
  post([self = shared_from_this()] {
    self->flush_input();
    self->read_more();
  });
}

void channel::core_caught_up() {
  post([self = shared_from_this()] { self->lift_barrier(); });
}

void channel::lift_barrier() {
  barrier_ = false;
  if (closed_)
    return;
  on_caught_up();
  decode_carried();
  if (closed_)
    return;
  flush_input();
  write_more();
  read_more();
}

// -- attachment -----------------------------------------------------------------------------

void channel::attach(uint64_t id, std::unique_ptr<net_input> in) {
  id_ = id;
  in_ = std::move(in);
}

void channel::enable_hold(std::chrono::microseconds delay, size_t limit) {
  if (delay.count() <= 0) {
    hold_.reset();
    return;
  }
  hold_ = std::make_unique<hold_state>();
  hold_->delay = delay;
  hold_->limit = limit == 0 ? 1 : limit;
}

void channel::enable_write_through() {
  if (!through_)
    through_ = std::make_unique<through_state>();
}

std::unique_lock<std::recursive_mutex> channel::lock_writes() {
  if (!through_)
    return {};
  std::unique_lock<std::recursive_mutex> guard{through_->mtx};
  through_->armed.store(false, std::memory_order_relaxed);
  return guard;
}

void channel::flush_input() {
  if (!in_)
    return;
  // The waker holds the channel: a parked connection lives until it routed its input.
  auto self = shared_from_this();
  if (!in_->flush([self] { self->resume_input(); })) {
    read_paused_ = true; // Back-pressure: TCP carries it to the peer.
    return;
  }
  read_paused_ = false;
  if (ending_) {
    ending_ = false;
    detach();
    return;
  }
  on_routed();
}

void channel::end_input() {
  if (!in_) {
    detach(); // Nothing was ever routed.
    return;
  }
  ending_ = true;
  flush_input(); // Routes what is left (or parks), then detaches.
}

void channel::mark_closed() noexcept {
  closed_ = true;
  if (through_)
    through_->armed.store(false, std::memory_order_relaxed); // Callers close under the lock.
  if (hold_ && hold_->holding) {
    hold_->holding = false;
    hold_->timer->cancel();
  }
}

// -- reading --------------------------------------------------------------------------------

void channel::read_more() {
  // Not while decoding: the bytes being decoded may live where the next read goes.
  if (closed_ || reading_ || decoding_ || input_blocked())
    return;
  reading_ = true;
  if (conn_->secure()) {
    auto n = tls_big_read_ ? tls_big_read_size : tls_read_size;
    auto* dst = rx_.prepare(n);
    conn_->async_read_some(asio::buffer(dst, n),
                           [self = shared_from_this()](boost::system::error_code ec, size_t k) {
                             self->reading_ = false;
                             self->on_tls_read(ec, k);
                           });
    return;
  }
  conn_->socket().async_wait(stream::socket_type::wait_read,
                             [self = shared_from_this()](boost::system::error_code ec) {
                               self->reading_ = false;
                               self->on_readable(ec);
                             });
}

void channel::on_readable(const boost::system::error_code& ec) {
  if (closed_)
    return;
  if (ec) {
    on_read_error(ec);
    return;
  }
  // The carried bytes go in front of the new ones: into the thread's buffer if they leave
  // it room for a good read, else the read continues in the carry buffer (a large frame).
  char* base;
  size_t room;
  size_t carried = rx_.size();
  bool shared = carried <= thread_buffer_size / 2;
  if (shared) {
    base = thread_buffer();
    if (carried > 0)
      std::memcpy(base, rx_.data(), carried);
    room = thread_buffer_size - carried;
  } else {
    rx_.prepare(thread_buffer_size);
    base = rx_.data();
    room = thread_buffer_size;
  }
  ssize_t n;
  do {
    n = ::recv(conn_->socket().native_handle(), base + carried, room, MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      read_more(); // Woken for nothing: wait again.
      return;
    }
    on_read_error(boost::system::error_code{errno, boost::system::system_category()});
    return;
  }
  if (n == 0) {
    on_read_error(asio::error::eof);
    return;
  }
  auto total = carried + static_cast<size_t>(n);
  decoding_ = true;
  if (shared) {
    rx_.consume(carried); // Its bytes are in the thread's buffer now.
    auto used = decode(base, total);
    if (used < total)
      rx_.assign(base + used, total - used);
  } else {
    rx_.commit(static_cast<size_t>(n));
    rx_.consume(decode(rx_.data(), rx_.size()));
  }
  decoding_ = false;
  after_read();
}

void channel::on_tls_read(const boost::system::error_code& ec, size_t n) {
  if (closed_)
    return;
  if (ec) {
    on_read_error(ec);
    return;
  }
  tls_big_read_ = n == (tls_big_read_ ? tls_big_read_size : tls_read_size);
  rx_.commit(n);
  decoding_ = true;
  rx_.consume(decode(rx_.data(), rx_.size()));
  decoding_ = false;
  after_read();
}

void channel::after_read() {
  if (hold_ && hold_->holding) {
    // We heard from the peer: whatever waits goes out now (the peer may wait for it).
    hold_->holding = false;
    hold_->timer->cancel();
  }
  if (closed_)
    return;
  flush_input();
  write_more();
  read_more();
}

void channel::decode_carried() {
  if (rx_.empty() || closed_)
    return;
  decoding_ = true;
  rx_.consume(decode(rx_.data(), rx_.size()));
  decoding_ = false;
}

// -- writing --------------------------------------------------------------------------------

void channel::wrote_data() {
  if (!hold_)
    return;
  hold_->last_write = std::chrono::steady_clock::now();
  hold_->heard.store(false, std::memory_order_relaxed);
}

bool channel::should_hold() {
  if (!hold_)
    return false;
  auto& h = *hold_;
  auto due = h.last_write + h.delay;
  bool hold = !h.heard.load(std::memory_order_relaxed) && ctrl_.empty() && queued() < h.limit
              && may_hold() && std::chrono::steady_clock::now() < due;
  if (!hold) {
    if (h.holding) {
      h.holding = false;
      h.timer->cancel();
    }
    return false;
  }
  if (h.holding)
    return true;
  h.holding = true;
  if (!h.timer)
    h.timer = std::make_unique<asio::steady_timer>(conn_->get_executor());
  h.timer->expires_at(due);
  h.timer->async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (ec || !self->hold_->holding)
      return; // Cancelled: a read already let the writes go.
    self->hold_->holding = false;
    self->write_more();
  });
  return true;
}

bool channel::would_hold() const noexcept {
  // should_hold()'s test without the subclass's part (the strand's state): a write the
  // strand would hold (a stream, not an exchange) is the strand's to hold.
  if (!hold_)
    return false;
  auto& h = *hold_;
  return !h.heard.load(std::memory_order_relaxed) && queued() < h.limit
         && std::chrono::steady_clock::now() < h.last_write + h.delay;
}

bool channel::write_through() {
  auto& t = *through_;
  if (!t.armed.load(std::memory_order_acquire))
    return false;
  std::unique_lock<std::recursive_mutex> guard{t.mtx, std::try_to_lock};
  if (!guard.owns_lock() || !t.armed.load(std::memory_order_relaxed))
    return false; // The strand (or another routing thread) writes now; it will take ours.
  if (!through_allowed()) {
    t.armed.store(false, std::memory_order_relaxed);
    return false;
  }
  if (would_hold())
    return false;
  for (;;) {
    switch (fill_through(gather_)) {
      case take_result::closed:
        t.armed.store(false, std::memory_order_relaxed);
        return false; // The strand ends the connection.
      case take_result::idle:
        return true;
      case take_result::ready:
        break;
    }
    t.count.store(t.count.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    boost::system::error_code ec;
    if (!conn_->write_now(gather_, ec)) {
      // The socket is full (or failed): the strand goes on from where this write stopped.
      t.armed.store(false, std::memory_order_relaxed);
      return false;
    }
    release_batch();
    gather_.clear();
  }
}

void channel::arm_through() {
  // On the strand, under the write lock, the write loop drained: nothing in flight.
  if (!closed_ && ctrl_.empty() && !conn_->secure() && may_write_through())
    through_->armed.store(true, std::memory_order_release);
}

void channel::write_more() {
  std::unique_lock<std::recursive_mutex> guard;
  if (through_) {
    guard = std::unique_lock<std::recursive_mutex>{through_->mtx};
    through_->armed.store(false, std::memory_order_relaxed);
  }
  while (!writing_ && !closed_) {
    if (gather_.done()) {
      bool wrote = !gather_.empty();
      release_batch();
      gather_.clear();
      if (wrote && !after_write())
        return;
      if (should_hold())
        return; // hold_timer_ (or the next read) calls us again.
      if (!fill(gather_)) {
        shrink_buffers();
        if (through_)
          arm_through();
        on_drained();
        return;
      }
    }
    if (conn_->secure()) {
      gather_.linearize(tls_buf_);
      writing_ = true;
      conn_->async_write_all(tls_buf_, [self = shared_from_this()](boost::system::error_code ec,
                                                                   size_t) {
        self->writing_ = false;
        if (self->closed_)
          return;
        if (ec) {
          self->on_write_error(ec);
          return;
        }
        self->gather_.consume(self->gather_.size());
        self->write_more();
      });
      return;
    }
    boost::system::error_code ec;
    if (conn_->write_now(gather_, ec))
      continue;
    if (ec) {
      on_write_error(ec);
      return;
    }
    writing_ = true;
    conn_->async_wait_writable([self = shared_from_this()](boost::system::error_code ec) {
      self->writing_ = false;
      if (self->closed_)
        return;
      if (ec) {
        self->on_write_error(ec);
        return;
      }
      self->write_more();
    });
    return;
  }
}

void channel::shrink_buffers() {
  if (gather_.capacity() > max_idle_gather_bytes)
    gather_buffer{}.swap(gather_);
  shrink_batch();
  if (ctrl_.empty() && ctrl_.capacity() > max_idle_ctrl)
    std::string{}.swap(ctrl_);
  if (!tls_buf_.empty() || tls_buf_.capacity() > 0)
    std::string{}.swap(tls_buf_);
  // Not rx_: a pending TLS read writes into it; it shrinks itself after each read.
}

} // namespace broker::internal
