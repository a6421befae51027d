#include "signal_watch.hh"

#include <csignal>
#include <sys/signalfd.h>
#include <unistd.h>

namespace broker_tools {

namespace {

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

} // namespace

signal_watch::signal_watch() {
  auto set = stop_signals();
  // A signal whose disposition is SIG_IGN (a shell's `node &` ignores SIGINT) is discarded
  // even while blocked, so it would never reach the signalfd: the tool must stay stoppable.
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  fd_ = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

signal_watch::~signal_watch() {
  if (fd_ >= 0)
    close(fd_);
}

bool signal_watch::consume() {
  if (fd_ < 0)
    return false;
  bool any = false;
  signalfd_siginfo info;
  while (read(fd_, &info, sizeof(info)) == static_cast<ssize_t>(sizeof(info)))
    any = true;
  return any;
}

} // namespace broker_tools
