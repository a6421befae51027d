// zmq-proxy: Zeek's central ZeroMQ forwarder as Zeek runs it (zeek/zeek
// src/cluster/backend/zeromq/ZeroMQ-Proxy.cc): libzmq's zmq_proxy_steerable() between an
// XSUB and an XPUB with XPUB_VERBOSER=1 and XPUB_NODROP=1, in a context of 2 I/O threads
// (Zeek's proxy_io_threads). The baseline of bench/zmq_forwarder.py (bench/README.md).
//
// Usage: zmq-proxy [--io-threads N] [--nodrop 0|1] [--address A] [--curve-secret Z85]
//        zmq-proxy --keypair      (prints a new CURVE key pair: "<public> <secret>", Z85)
// With --curve-secret both sockets are CURVE servers with that key, as Zeek's forwarder
// with curve_server_secretkey (without Zeek's ZAP handler: every client key is admitted).
// Binds both sockets on ephemeral ports of A (default 127.0.0.1) and prints
//   xsub-port <port>      (where node XPUBs connect; Zeek's listen_xsub_endpoint)
//   xpub-port <port>      (where node XSUBs connect; Zeek's listen_xpub_endpoint)
// then forwards until SIGTERM or SIGINT, which a watcher thread turns into the proxy's
// TERMINATE command. libzmq only here: libbroker never links it.

#include <zmq.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <pthread.h>
#include <string>
#include <thread>

namespace {

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "zmq-proxy: %s: %s\n", what, zmq_strerror(zmq_errno()));
  std::exit(1);
}

int bound_port(void* sock) {
  char endpoint[256];
  size_t size = sizeof(endpoint);
  if (zmq_getsockopt(sock, ZMQ_LAST_ENDPOINT, endpoint, &size) != 0)
    die("ZMQ_LAST_ENDPOINT");
  const char* colon = std::strrchr(endpoint, ':');
  return colon ? std::atoi(colon + 1) : -1;
}

} // namespace

int main(int argc, char** argv) {
  int io_threads = 2;
  int nodrop = 1;
  std::string address = "127.0.0.1";
  std::string curve_secret;
  if (argc == 2 && std::string{argv[1]} == "--keypair") {
    char pub[41], sec[41];
    if (zmq_curve_keypair(pub, sec) != 0)
      die("zmq_curve_keypair");
    std::printf("%s %s\n", pub, sec);
    return 0;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string key = argv[i];
    if (key == "--io-threads")
      io_threads = std::atoi(argv[i + 1]);
    else if (key == "--nodrop")
      nodrop = std::atoi(argv[i + 1]);
    else if (key == "--address")
      address = argv[i + 1];
    else if (key == "--curve-secret")
      curve_secret = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: zmq-proxy [--io-threads N] [--nodrop 0|1] [--address A] "
                           "[--curve-secret Z85] | --keypair\n");
      return 2;
    }
  }
  // Signals go to the watcher thread only.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  void* ctx = zmq_ctx_new();
  if (zmq_ctx_set(ctx, ZMQ_IO_THREADS, io_threads) != 0)
    die("ZMQ_IO_THREADS");
  void* xpub = zmq_socket(ctx, ZMQ_XPUB);
  void* xsub = zmq_socket(ctx, ZMQ_XSUB);
  int one = 1;
  int zero = 0;
  if (zmq_setsockopt(xpub, ZMQ_XPUB_VERBOSER, &one, sizeof(one)) != 0
      || zmq_setsockopt(xpub, ZMQ_XPUB_NODROP, &nodrop, sizeof(nodrop)) != 0
      || zmq_setsockopt(xpub, ZMQ_LINGER, &zero, sizeof(zero)) != 0
      || zmq_setsockopt(xsub, ZMQ_LINGER, &zero, sizeof(zero)) != 0)
    die("setsockopt");
  if (!curve_secret.empty() && curve_secret.size() != 40) {
    std::fprintf(stderr, "zmq-proxy: --curve-secret: a Z85 key has 40 characters\n");
    return 2;
  }
  if (!curve_secret.empty())
    for (void* s : {xsub, xpub})
      if (zmq_setsockopt(s, ZMQ_CURVE_SERVER, &one, sizeof(one)) != 0
          || zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, curve_secret.c_str(), 40) != 0)
        die("CURVE server options");
  std::string any = "tcp://" + address + ":*";
  if (zmq_bind(xsub, any.c_str()) != 0 || zmq_bind(xpub, any.c_str()) != 0)
    die("bind");
  void* control = zmq_socket(ctx, ZMQ_PAIR);
  void* steer = zmq_socket(ctx, ZMQ_PAIR);
  if (zmq_bind(control, "inproc://zmq-proxy-control") != 0
      || zmq_connect(steer, "inproc://zmq-proxy-control") != 0)
    die("control socket");
  std::printf("xsub-port %d\nxpub-port %d\n", bound_port(xsub), bound_port(xpub));
  std::fflush(stdout);

  std::thread watcher([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    zmq_send(steer, "TERMINATE", 9, 0);
  });
  watcher.detach();
  zmq_proxy_steerable(xsub, xpub, nullptr, control);
  zmq_close(xsub);
  zmq_close(xpub);
  zmq_close(control);
  // The watcher's socket stays open; the process ends here without zmq_ctx_term().
  return 0;
}
