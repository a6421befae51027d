"""py.tls: brokerclient over wss:// with mutual TLS, using the test PKI of ws.tls
(brokertest.nodes.NODE_TLS and cert(): the node's certificate with an encrypted key, the
CA, and a client certificate from that CA).

- blocking and asyncio clients connect with cafile/certfile/keyfile and exchange values,
  and the CLI does the same with --cafile/--certfile/--keyfile;
- a client without a certificate, one that does not trust the node's CA, and a ws:// client
  are refused with ConnectError;
- TLS options on a ws:// URL are a usage error.
"""

import asyncio
import os
import ssl
import sys

import harness  # noqa: F401  (the paths of brokertest and brokerclient)
from brokertest.checks import check, check_eq, run_tests
from brokertest.nodes import NODE_TLS, Node, cert
from brokertest.procs import run_once
from brokertest.wsclient import in_thread

import brokerclient
from brokerclient import ConnectError, Count, aio

TIMEOUT = 10
CLI_TIMEOUT = 30
#: brokerclient options of a client the test CA signed.
TLS_CLIENT = {"cafile": cert("ca.pem"), "certfile": cert("client.pem"),
              "keyfile": cert("client.key")}


def start_node(binary):
    return Node(binary, web_socket=True, tls=NODE_TLS)


async def expect_refused(what, url, **options):
    try:
        client = await asyncio.wait_for(aio.connect(url, ["/t"], open_timeout=5, **options), 20)
    except ConnectError as e:
        print("%s: refused: %s" % (what, e))
        return
    await client.close()
    raise AssertionError("%s was accepted" % what)


async def test_wss(node_bin):
    """blocking, asyncio and command-line clients exchange values over mutual-TLS wss://"""
    with start_node(node_bin) as node:
        url = node.url()
        check(url.startswith("wss://"), "the node's URL: %s" % url)

        sub = await in_thread(brokerclient.connect, url, ["/t"], **TLS_CLIENT)
        async with aio.connect(url, [], **TLS_CLIENT) as pub:
            await pub.publish("/t/secure", {Count(1): "one"})
            check_eq(await in_thread(sub.get, TIMEOUT), ("/t/secure", {Count(1): "one"}),
                     "a value over wss://")

            # A ready SSLContext works as well.
            context = ssl.create_default_context(cafile=TLS_CLIENT["cafile"])
            context.load_cert_chain(TLS_CLIENT["certfile"], TLS_CLIENT["keyfile"])
            async with aio.connect(url, [], ssl=context) as other:
                await other.publish("/t/context", 2)
            check_eq(await in_thread(sub.get, TIMEOUT), ("/t/context", 2), "ssl= context")

            # The command line with the same files.
            code, _, err = await in_thread(run_once, sys.executable, [
                "-m", "brokerclient", "publish", url, "/t/cli", "10.0.0.1",
                "--cafile", TLS_CLIENT["cafile"], "--certfile", TLS_CLIENT["certfile"],
                "--keyfile", TLS_CLIENT["keyfile"]],
                env={"PYTHONPATH": os.pathsep.join(sys.path)}, timeout=CLI_TIMEOUT)
            check_eq(code, 0, "CLI publish over wss:// (stderr: %s)" % err)
            topic, value = await in_thread(sub.get, TIMEOUT)
            check_eq((topic, str(value)), ("/t/cli", "10.0.0.1"), "CLI publish over wss://")
        await in_thread(sub.close)


async def test_refusals(node_bin):
    """clients without the right certificate or CA, and ws:// clients, are refused

    TLS options on a ws:// URL are a usage error (ValueError)."""
    with start_node(node_bin) as node:
        url = node.url()
        await expect_refused("a client without a certificate", url,
                             cafile=TLS_CLIENT["cafile"])
        await expect_refused("a client with another CA's certificate", url,
                             cafile=TLS_CLIENT["cafile"], certfile=cert("intruder.pem"),
                             keyfile=cert("intruder.key"))
        await expect_refused("a client that does not trust the node's CA", url,
                             certfile=TLS_CLIENT["certfile"], keyfile=TLS_CLIENT["keyfile"])
        await expect_refused("a ws:// client", url.replace("wss://", "ws://"))
        try:
            await aio.connect(url.replace("wss://", "ws://"), [], **TLS_CLIENT)
            raise AssertionError("TLS options on a ws:// URL were accepted")
        except ValueError as e:
            print("ws:// with TLS options: %s" % e)


run_tests([test_wss, test_refusals], limit=75)
