#include "sd_notify.hh"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <string>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

using namespace broker_tools;

namespace {

/// A datagram socket playing the service manager, bound to `name` (a path or "@abstract").
struct fake_manager {
  explicit fake_manager(std::string name) : name(std::move(name)) {
    fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, this->name.data(), this->name.size());
    if (this->name.front() == '@')
      addr.sun_path[0] = '\0';
    auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + this->name.size());
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0);
    ::setenv("NOTIFY_SOCKET", this->name.c_str(), 1);
  }

  ~fake_manager() {
    ::unsetenv("NOTIFY_SOCKET");
    ::close(fd);
    if (name.front() == '/')
      ::unlink(name.c_str());
  }

  std::string receive() {
    char buf[256];
    auto n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    return n < 0 ? std::string{} : std::string(buf, static_cast<size_t>(n));
  }

  std::string name;
  int fd = -1;
};

} // namespace

TEST_CASE("sd_notify sends the state to NOTIFY_SOCKET, a path or an abstract name",
          "[sd_notify]") {
  auto id = std::to_string(::getpid());
  for (auto name : {"/tmp/broker-notify-test-" + id, "@broker-notify-test-" + id}) {
    fake_manager manager{name};
    INFO(name);
    CHECK(sd_notify("READY=1\nSTATUS=up") == notify_result::sent);
    CHECK(manager.receive() == "READY=1\nSTATUS=up");
  }
}

TEST_CASE("sd_notify does nothing outside systemd", "[sd_notify]") {
  ::unsetenv("NOTIFY_SOCKET");
  CHECK(sd_notify("READY=1") == notify_result::no_socket);
  ::setenv("NOTIFY_SOCKET", "", 1);
  CHECK(sd_notify("READY=1") == notify_result::no_socket);
  ::unsetenv("NOTIFY_SOCKET");
}

TEST_CASE("sd_notify names the socket it cannot reach", "[sd_notify]") {
  std::string error;
  ::setenv("NOTIFY_SOCKET", "/nonexistent/notify", 1);
  CHECK(sd_notify("READY=1", &error) == notify_result::failed);
  CHECK(error.find("cannot notify \"/nonexistent/notify\"") == 0);
  ::setenv("NOTIFY_SOCKET", "relative", 1);
  CHECK(sd_notify("READY=1", &error) == notify_result::failed);
  CHECK(error.find("is not a Unix socket path") != std::string::npos);
  ::unsetenv("NOTIFY_SOCKET");
}
