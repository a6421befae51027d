#pragma once

// fanout_conn: one non-blocking TCP connection of fanout-drive (fanout_drive.hh) and the
// epoll helpers around it. Owner: the one thread of the process that made it.

#include "fanout_drive.hh"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace fanout {

struct connection {
  connection(const drive_options& o, bool subscriber)
    : w(o.proto, subscriber, o.variant_b, o.host + ":" + std::to_string(o.port)) {}

  wire w;
  int fd = -1;
  std::string carry;    ///< The incomplete frame at the end of the last read.
  std::string out;      ///< To send: [out_pos, out.size()).
  size_t out_pos = 0;
  bool connected = false;
  bool ready = false;
  bool polling_out = false;
  uint64_t last_seq = 0;
  std::string error;

  /// Starts a non-blocking connect and registers with `ep` under `tag`. False on error.
  bool open(const drive_options& o, int ep, uint64_t tag) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
      return fail("socket: " + std::string{std::strerror(errno)});
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(o.port);
    if (::inet_pton(AF_INET, o.host.c_str(), &addr.sin_addr) != 1)
      return fail("bad host " + o.host);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0
        && errno != EINPROGRESS)
      return fail("connect: " + std::string{std::strerror(errno)});
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT;
    ev.data.u64 = tag;
    polling_out = true;
    if (::epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0)
      return fail("epoll_ctl: " + std::string{std::strerror(errno)});
    return true;
  }

  /// The connect finished (first EPOLLOUT): checks it and queues the handshake.
  bool on_connected() {
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0)
      return fail("connect: " + std::string{std::strerror(err)});
    connected = true;
    w.start(out);
    return true;
  }

  /// Writes what is pending; polls for EPOLLOUT while the socket is full. False on error.
  bool flush(int ep, uint64_t tag) {
    while (out_pos < out.size()) {
      auto n = ::write(fd, out.data() + out_pos, out.size() - out_pos);
      if (n < 0) {
        if (errno == EAGAIN)
          return want_out(ep, tag, true);
        return fail("write: " + std::string{std::strerror(errno)});
      }
      out_pos += static_cast<size_t>(n);
    }
    out.clear();
    out_pos = 0;
    return want_out(ep, tag, false);
  }

  size_t pending_out() const { return out.size() - out_pos; }

  /// Reads once into `scratch` (after the partial frame kept from the last read) and
  /// parses there; calls on_payload for each payload. False on error or EOF. One scratch
  /// buffer for all connections of a process stays in the cache between the kernel's copy
  /// and the parse; only the tail of an incomplete frame is copied out (to `carry`).
  template <class OnPayload>
  bool read_some(std::vector<char>& scratch, OnPayload&& on_payload) {
    if (scratch.size() < carry.size() * 2)
      scratch.resize(carry.size() * 2);
    std::memcpy(scratch.data(), carry.data(), carry.size());
    auto filled = carry.size();
    auto n = ::read(fd, scratch.data() + filled, scratch.size() - filled);
    if (n == 0)
      return fail("server closed the connection");
    if (n < 0)
      return errno == EAGAIN ? true : fail("read: " + std::string{std::strerror(errno)});
    filled += static_cast<size_t>(n);
    auto used = w.feed(scratch.data(), filled, out, on_payload);
    if (w.event == wire_event::failed)
      return fail(w.error);
    carry.assign(scratch.data() + used, filled - used);
    return true;
  }

  bool fail(std::string what) {
    error = std::move(what);
    return false;
  }

private:
  bool want_out(int ep, uint64_t tag, bool on) {
    if (on == polling_out)
      return true;
    epoll_event ev{};
    ev.events = EPOLLIN | (on ? EPOLLOUT : 0u);
    ev.data.u64 = tag;
    polling_out = on;
    if (::epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev) != 0)
      return fail("epoll_ctl: " + std::string{std::strerror(errno)});
    return true;
  }
};

/// Bytes of the read buffer each process shares between its connections.
constexpr size_t scratch_size = 64 * 1024;

/// Adds a descriptor (eventfd, timerfd) to `ep` for EPOLLIN under `tag`.
inline void watch(int ep, int fd, uint64_t tag) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = tag;
  ::epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

/// Bumps an eventfd (a wake-up for whoever waits on it).
inline void poke(int efd) {
  uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(efd, &one, sizeof one);
}

/// Clears an eventfd.
inline void drain(int efd) {
  uint64_t x;
  [[maybe_unused]] auto n = ::read(efd, &x, sizeof x);
}

} // namespace fanout
