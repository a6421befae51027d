"""Where the py.* tests find their code: the only file that knows the paths.

Importing it puts on sys.path the system tests' helper package (tests/lib/brokertest: nodes,
run_tests, the test PKI, ...), the brokerclient package (python/, also on PYTHONPATH under
ctest) and its unit tests (python/tests, for the codec's test vectors). Without the
websockets module, which brokerclient needs, it ends the script as skipped (exit 77).

    import harness  # noqa: F401
    from brokertest.checks import check_eq, run_tests
    from brokertest.nodes import Node
    from brokertest.wsclient import in_thread
    import brokerclient

    async def test_x(node_bin):
        "what the test shows"
        with Node(node_bin, web_socket=True) as node:
            sub = await in_thread(brokerclient.connect, node.url(), ["/t"])
            ...
    run_tests([test_x], limit=60)
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PYTHON_PACKAGE = os.path.join(ROOT, "python")
UNIT_TESTS = os.path.join(PYTHON_PACKAGE, "tests")

for path in (os.path.join(ROOT, "tests", "lib"), PYTHON_PACKAGE, UNIT_TESTS):
    if path not in sys.path:
        sys.path.insert(0, path)

import brokertest.wsclient  # noqa: E402,F401  (skips the script without websockets)
