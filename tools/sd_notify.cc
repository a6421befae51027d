#include "sd_notify.hh"

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace broker_tools {

notify_result sd_notify(std::string_view state, std::string* error) {
  auto fail = [error](const std::string& what) {
    if (error != nullptr)
      *error = what;
    return notify_result::failed;
  };
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (path == nullptr || *path == '\0')
    return notify_result::no_socket;
  std::string_view name{path};
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if ((name.front() != '/' && name.front() != '@') || name.size() >= sizeof(addr.sun_path))
    return fail("NOTIFY_SOCKET=\"" + std::string{name} + "\" is not a Unix socket path");
  std::memcpy(addr.sun_path, name.data(), name.size());
  if (name.front() == '@')
    addr.sun_path[0] = '\0'; // The abstract namespace.
  auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
  int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return fail(std::string{"cannot create a socket for NOTIFY_SOCKET: "} + std::strerror(errno));
  auto sent = ::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL,
                       reinterpret_cast<const sockaddr*>(&addr), len);
  auto err = errno;
  ::close(fd);
  if (sent < 0 || static_cast<size_t>(sent) != state.size())
    return fail("cannot notify \"" + std::string{name} + "\": " + std::strerror(err));
  return notify_result::sent;
}

} // namespace broker_tools
