#include "broker/internal/zeromq/uplink.hh"

#include "broker/internal/io/stream.hh"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>

namespace asio = boost::asio;

namespace broker::internal::zeromq {

namespace {

constexpr std::string_view component = "zeromq";

std::string address_of(const std::string& addr, uint16_t port) {
  auto a = addr.find(':') == std::string::npos ? addr : "[" + addr + "]";
  return a + ":" + std::to_string(port);
}

std::string retry_text() {
  return "every " + std::to_string(reconnect_min_ms) + " ms to "
         + std::to_string(reconnect_max_ms / 1000) + " s";
}

} // namespace

uplink::uplink(io_runtime& io, std::shared_ptr<node_hub> hub, connect_target target,
               link_options base, std::chrono::milliseconds connect_timeout)
  : io_(io),
    hub_(std::move(hub)),
    target_(std::move(target)),
    base_(std::move(base)),
    strand_(asio::make_strand(io.context())),
    timer_(strand_),
    stable_timer_(strand_),
    resolver_(strand_),
    connect_timeout_(connect_timeout) {
  name_ = std::string{base_.role == side::xpub ? "xpub" : "xsub"} + " connection to "
          + target_.text;
}

void uplink::start() {
  asio::post(strand_, [self = shared_from_this()] { self->connect(); });
}

void uplink::stop() {
  std::shared_ptr<zmq_link> l;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    stopped_ = true;
    l = link_;
  }
  if (l)
    l->close_async("the node shuts down");
  asio::post(strand_, [self = shared_from_this()] {
    self->timer_.cancel();
    self->stable_timer_.cancel();
    self->resolver_.cancel();
    if (self->socket_) {
      boost::system::error_code ignored;
      self->socket_->close(ignored);
    }
  });
}

link_status uplink::status() const {
  link_status st;
  std::lock_guard<std::mutex> guard{mtx_};
  st.name = name_;
  st.side = base_.role == side::xpub ? "xpub" : "xsub";
  st.peer = peer_.empty() ? target_.host + ":" + std::to_string(target_.port) : peer_;
  st.endpoint = target_.text;
  st.state = state_;
  st.messages_in = totals_.in;
  st.messages_out = totals_.out;
  st.dropped = totals_.dropped;
  if (link_) {
    st.messages_in += link_->stats().messages_in.load(std::memory_order_relaxed);
    st.messages_out += link_->stats().messages_out.load(std::memory_order_relaxed);
    st.dropped += link_->stats().dropped.load(std::memory_order_relaxed);
    st.queued = link_->queue_size();
  }
  st.capacity = base_.buffer_size;
  st.policy = std::string{to_string(base_.policy)};
  st.connects = connects_;
  st.connect_failures = connect_failures_;
  st.failed = failed_;
  st.last_error = last_error_;
  return st;
}

// -- on the strand --------------------------------------------------------------------------

void uplink::log(log_level lvl, const std::string& text) {
  io_.get_logger().write(lvl, component, text);
}

bool uplink::is_stopped() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return stopped_;
}

void uplink::connect() {
  if (is_stopped())
    return;
  attempting_ = true;
  timed_out_ = false;
  timer_.expires_after(connect_timeout_);
  timer_.async_wait([self = shared_from_this(), n = ++attempt_](boost::system::error_code ec) {
    if (!ec)
      self->on_attempt_timeout(n);
  });
  resolver_.async_resolve(
    target_.host, std::to_string(target_.port),
    asio::bind_executor(strand_, [self = shared_from_this()](boost::system::error_code ec,
                                                             tcp::resolver::results_type rs) {
      self->on_resolved(ec, std::move(rs));
    }));
}

void uplink::on_attempt_timeout(uint64_t attempt) {
  if (attempt != attempt_ || !attempting_)
    return; // The attempt ended before its timer's handler ran.
  timed_out_ = true;
  // The pending operation completes with operation_aborted, which fails the attempt.
  resolver_.cancel();
  if (socket_) {
    boost::system::error_code ignored;
    socket_->close(ignored);
  }
}

std::string uplink::attempt_error(const std::string& what) const {
  if (timed_out_)
    return "no connection within " + std::to_string(connect_timeout_.count())
           + " ms (broker.zeromq.connect-timeout)";
  return what;
}

void uplink::on_resolved(boost::system::error_code ec, tcp::resolver::results_type rs) {
  if (is_stopped())
    return;
  if (ec || timed_out_) {
    attempting_ = false;
    attempt_failed(attempt_error("cannot resolve " + target_.host + ": " + ec.message()));
    return;
  }
  socket_.emplace(strand_);
  asio::async_connect(*socket_, rs,
                      asio::bind_executor(strand_, [self = shared_from_this()](
                                                     boost::system::error_code ec,
                                                     const tcp::endpoint&) {
                        self->on_connected(ec);
                      }));
}

void uplink::on_connected(boost::system::error_code ec) {
  auto sock = std::move(*socket_);
  socket_.reset();
  attempting_ = false;
  timer_.cancel();
  if (is_stopped())
    return;
  if (ec || timed_out_) {
    attempt_failed(attempt_error(ec.message()));
    return;
  }
  boost::system::error_code ignored;
  sock.set_option(tcp::no_delay{true}, ignored);
  auto opts = base_;
  opts.name = name_;
  if (auto remote = sock.remote_endpoint(ignored); !ignored) {
    opts.address = remote.address().to_string();
    opts.port = remote.port();
  }
  std::weak_ptr<uplink> weak = shared_from_this();
  // The link's only line in node mode is its close (see the header on outages).
  opts.log = [weak](bool is_error, const std::string& text) {
    if (auto self = weak.lock())
      self->link_log(is_error, text);
  };
  std::shared_ptr<forwarder> fwd{hub_, base_.role == side::xpub ? &hub_->out : &hub_->in};
  auto address = opts.address;
  auto port = opts.port;
  auto l = std::make_shared<zmq_link>(std::make_unique<stream>(std::move(sock), nullptr),
                                      &hub_->g, std::move(fwd), std::move(opts));
  l->set_on_ready([weak] {
    if (auto self = weak.lock())
      self->on_link_ready();
  });
  l->set_on_close([weak](bool failed) {
    if (auto self = weak.lock())
      self->on_link_closed(failed);
  });
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (stopped_)
      return;
    link_ = l;
    peer_ = address.empty() ? std::string{} : address_of(address, port);
  }
  log(log_level::debug, name_ + ": TCP connected");
  l->start();
}

void uplink::link_log(bool is_error, const std::string& text) {
  bool stopped = false;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    stopped = stopped_;
    if (is_error)
      last_error_ = text;
  }
  if (stopped) {
    log(log_level::info, text);
    return;
  }
  if (quiet_)
    return; // One more failure of an outage already logged (counted).
  quiet_ = true;
  log(is_error ? log_level::warning : log_level::info, text + "; reconnecting (" + retry_text()
                                                         + ")");
}

bool uplink::stable() const {
  return up_since_
         && std::chrono::steady_clock::now() - *up_since_
              >= std::chrono::milliseconds{reconnect_max_ms};
}

void uplink::on_link_ready() {
  uint64_t n = 0;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    state_ = "connected";
    n = ++connects_;
  }
  up_since_ = std::chrono::steady_clock::now();
  if (!quiet_) {
    // The first connection (or one after a quiet time): at once.
    log(log_level::info, name_ + ": connected");
    return;
  }
  // A reconnection ends the outage once it lasted (a flapping forwarder stays one outage).
  stable_timer_.expires_after(std::chrono::milliseconds{reconnect_max_ms});
  stable_timer_.async_wait([self = shared_from_this(), n](boost::system::error_code ec) {
    if (ec || !self->quiet_ || !self->up_since_)
      return;
    {
      std::lock_guard<std::mutex> guard{self->mtx_};
      if (self->connects_ != n || self->stopped_)
        return;
    }
    self->quiet_ = false;
    self->log(log_level::info, self->name_ + ": connected again");
  });
}

void uplink::on_link_closed(bool failed) {
  // libzmq starts over at the shortest interval after every connection; we only after one
  // that lasted, so that a forwarder that fails every connection is tried every 2 s.
  if (stable())
    backoff_ms_ = reconnect_min_ms;
  up_since_.reset();
  stable_timer_.cancel();
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (link_) {
      totals_.in += link_->stats().messages_in.load(std::memory_order_relaxed);
      totals_.out += link_->stats().messages_out.load(std::memory_order_relaxed);
      totals_.dropped += link_->stats().dropped.load(std::memory_order_relaxed);
      // The link lives on while its pending handlers hold it.
      link_.reset();
    }
    if (failed)
      ++failed_;
    peer_.clear();
    if (stopped_)
      return;
    state_ = "reconnecting";
  }
  retry_later();
}

void uplink::attempt_failed(const std::string& why) {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    ++connect_failures_;
    last_error_ = why;
  }
  if (!quiet_) {
    quiet_ = true;
    log(log_level::warning, name_ + ": cannot connect: " + why + "; retrying (" + retry_text()
                              + ")");
  }
  retry_later();
}

void uplink::retry_later() {
  if (is_stopped())
    return;
  timer_.expires_after(std::chrono::milliseconds{backoff_ms_});
  backoff_ms_ = std::min(backoff_ms_ * 2, reconnect_max_ms);
  timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (!ec)
      self->connect();
  });
}

} // namespace broker::internal::zeromq
