"""The helpers of broker's system tests (tests/) and benchmark scripts (bench/).

checks    TestFailure, check, check_eq, Skip, skip_script(); run_tests(): the harness a
          script ends with
procs     Proc (any process, its output line by line), Cleanup, run_once()
nodes     Node (broker-node; restart()), is_status, is_received, peer_uri; the test PKI:
          NODE_TLS, cert()
store     Tool (a broker-store session), run_tool(), STORE_FLAGS, typed()
net       free_port(), addr(), Prometheus metrics: scrape_metrics(), wait_metric()
peer      RawPeer: a native peering written from doc/protocol/peering.md, value encoding
rawws     RawClient: a WebSocket client written from RFC 6455, frame by frame
wsclient  the websockets library's client with bounded waits, in_thread() (the ws.* and
          py.* tests only)
proxy     Proxy: a TCP relay process that SIGSTOP pauses (one link), read_trace()
stamped   StampClient: publishes numbered messages, records every delivery

Python 3.9 standard library only, but for wsclient. See tests/README.md.
"""
