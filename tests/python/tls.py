"""py.tls: brokerclient over wss:// with mutual TLS, using the test PKI of ws.tls
(tests/web_socket/certs: the node's certificate with an encrypted key, the CA, and a
client certificate from that CA).

- blocking and asyncio clients connect with cafile/certfile/keyfile and exchange values,
  and the CLI does the same with --cafile/--certfile/--keyfile;
- a client without a certificate, one that does not trust the node's CA, and a ws:// client
  are refused with ConnectError;
- TLS options on a ws:// URL are a usage error.
"""

import asyncio
import os
import ssl
import subprocess
import sys

from harness import CERTS, TLS_CLIENT, TLS_NODE, Node, blocking, check, check_eq, run

import brokerclient  # noqa: E402
from brokerclient import ConnectError, Count, aio

TIMEOUT = 10


async def expect_refused(what, url, **options):
    try:
        client = await asyncio.wait_for(aio.connect(url, ["/t"], open_timeout=5, **options), 20)
    except ConnectError as e:
        print("%s: refused: %s" % (what, e))
        return
    await client.close()
    raise AssertionError("%s was accepted" % what)


async def main(binary):
    with Node(binary, tls=TLS_NODE) as node:
        url = node.url()
        check(url.startswith("wss://"), "the node's URL: %s" % url)

        sub = await blocking(brokerclient.connect, url, ["/t"], **TLS_CLIENT)
        async with aio.connect(url, [], **TLS_CLIENT) as pub:
            await pub.publish("/t/secure", {Count(1): "one"})
            check_eq(await blocking(sub.get, TIMEOUT), ("/t/secure", {Count(1): "one"}),
                     "a value over wss://")

            # A ready SSLContext works as well.
            context = ssl.create_default_context(cafile=TLS_CLIENT["cafile"])
            context.load_cert_chain(TLS_CLIENT["certfile"], TLS_CLIENT["keyfile"])
            async with aio.connect(url, [], ssl=context) as other:
                await other.publish("/t/context", 2)
            check_eq(await blocking(sub.get, TIMEOUT), ("/t/context", 2), "ssl= context")

            # The command line with the same files.
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
            result = await blocking(subprocess.run, [
                sys.executable, "-m", "brokerclient", "publish", url, "/t/cli", "10.0.0.1",
                "--cafile", TLS_CLIENT["cafile"], "--certfile", TLS_CLIENT["certfile"],
                "--keyfile", TLS_CLIENT["keyfile"]], env=env, capture_output=True,
                text=True, timeout=30)
            check_eq(result.returncode, 0, "CLI publish over wss:// (stderr: %s)"
                     % result.stderr)
            topic, value = await blocking(sub.get, TIMEOUT)
            check_eq((topic, str(value)), ("/t/cli", "10.0.0.1"), "CLI publish over wss://")

        await expect_refused("a client without a certificate", url,
                             cafile=TLS_CLIENT["cafile"])
        await expect_refused("a client with another CA's certificate", url,
                             cafile=TLS_CLIENT["cafile"],
                             certfile=os.path.join(CERTS, "intruder.pem"),
                             keyfile=os.path.join(CERTS, "intruder.key"))
        await expect_refused("a client that does not trust the node's CA", url,
                             certfile=TLS_CLIENT["certfile"], keyfile=TLS_CLIENT["keyfile"])
        await expect_refused("a ws:// client", url.replace("wss://", "ws://"))
        try:
            await aio.connect(url.replace("wss://", "ws://"), [], **TLS_CLIENT)
            raise AssertionError("TLS options on a ws:// URL were accepted")
        except ValueError as e:
            print("ws:// with TLS options: %s" % e)
        await blocking(sub.close)


run(main, limit=90)
