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

bool signal_watch::watch_hangup() {
  if (fd_ < 0)
    return false;
  auto set = stop_signals();
  sigaddset(&set, SIGHUP);
  // nohup(1) sets SIGHUP to SIG_IGN, which would discard it even while blocked.
  std::signal(SIGHUP, SIG_DFL);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  // The same descriptor, now with SIGHUP in its mask.
  return signalfd(fd_, &set, SFD_NONBLOCK | SFD_CLOEXEC) == fd_;
}

bool signal_watch::consume() {
  if (fd_ < 0)
    return false;
  bool stop = false;
  signalfd_siginfo info;
  while (read(fd_, &info, sizeof(info)) == static_cast<ssize_t>(sizeof(info))) {
    if (info.ssi_signo == SIGHUP)
      hangup_ = true;
    else
      stop = true;
  }
  return stop;
}

} // namespace broker_tools
