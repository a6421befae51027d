"""py.install: `pip install ./python` works offline, and the README's two examples (the
blocking and the asyncio five-liner) run with the installed package against a real node.

The package is copied to a temporary directory (pip builds in the source tree) and
installed with `--no-index --no-build-isolation` into a fresh virtual environment that
sees the system's site-packages (for pip, setuptools and websockets), so nothing is
downloaded. Skips (exit 77) when this interpreter lacks pip, setuptools >= 61 or venv
(scripts/install-deps installs python3-pip, python3-setuptools and python3-wheel).
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

from harness import PYTHON_PACKAGE, ROOT
from brokertest.checks import Skip, check, check_eq, run_tests
from brokertest.nodes import Node
from brokertest.wsclient import in_thread

TIMEOUT = 120


def tooling_problem():
    """Why this interpreter cannot install the package offline, or None."""
    probe = subprocess.run([sys.executable, "-c", (
        "import setuptools, pip, venv\n"
        "v = tuple(int(x) for x in setuptools.__version__.split('.')[:2])\n"
        "assert v >= (61, 0), 'setuptools ' + setuptools.__version__\n"
        "if v < (70, 1): import wheel  # older setuptools build wheels with it")],
        capture_output=True, text=True, env=install_env(), timeout=TIMEOUT)
    return probe.stderr.strip().splitlines()[-1] if probe.returncode else None


def install_env():
    """The environment without pip settings and without the source tree on the path (but
    with any other PYTHONPATH entry, e.g. where a websockets release was put)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    paths = [p for p in env.pop("PYTHONPATH", "").split(os.pathsep)
             if p and os.path.realpath(p) != os.path.realpath(PYTHON_PACKAGE)]
    if paths:
        env["PYTHONPATH"] = os.pathsep.join(paths)
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    return env


def readme_examples():
    """The ```python blocks of python/README.md that connect to a node."""
    with open(os.path.join(PYTHON_PACKAGE, "README.md"), encoding="utf-8") as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    return [b for b in blocks if "ws://127.0.0.1:9997" in b][:2]


def install(tmp):
    source = os.path.join(tmp, "src")
    shutil.copytree(PYTHON_PACKAGE, source, ignore=shutil.ignore_patterns(
        "__pycache__", "build", "*.egg-info"))
    venv = os.path.join(tmp, "venv")
    env = install_env()
    result = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages",
                             "--without-pip", venv], capture_output=True, text=True, env=env,
                            timeout=TIMEOUT)
    check_eq(result.returncode, 0, "creating the venv (stderr: %s)" % result.stderr)
    python = os.path.join(venv, "bin", "python")
    result = subprocess.run([python, "-m", "pip", "install", "--no-index",
                             "--no-build-isolation", source], capture_output=True, text=True,
                            env=env, timeout=TIMEOUT, cwd=tmp)
    check_eq(result.returncode, 0, "pip install ./python (stdout: %s\nstderr: %s)"
             % (result.stdout[-2000:], result.stderr[-2000:]))
    print(result.stdout.strip().splitlines()[-1])
    return venv, python, env


def tree(root):
    """Every path below `root` (bytecode caches aside), relative to it."""
    result = set()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for name in dirnames + filenames:
            result.add(os.path.relpath(os.path.join(dirpath, name), root))
    return result


async def test_install(node_bin):
    """pip installs ./python offline, and the README's examples run against a node"""
    # What this test does to the source tree is what counts: a user who followed the
    # README (`pip install ./python`) may have left python/build behind already.
    before = tree(PYTHON_PACKAGE)
    problem = await in_thread(tooling_problem)
    if problem:
        raise Skip("cannot install offline with %s: %s" % (sys.executable, problem))
    examples = readme_examples()
    check_eq(len(examples), 2, "python/README.md's blocking and asyncio examples")
    tmp = tempfile.mkdtemp(prefix="brokerclient-install-")
    try:
        venv, python, env = await in_thread(install, tmp)
        result = await in_thread(subprocess.run, [python, "-c", (
            "import brokerclient, importlib.metadata as m; print(brokerclient.__file__); "
            "print(m.version('broker-client'))")], capture_output=True, text=True, env=env,
            cwd=tmp, timeout=TIMEOUT)
        check_eq(result.returncode, 0, "importing the installed package: %s" % result.stderr)
        location, version = result.stdout.split()
        check(location.startswith(venv), "brokerclient imported from %s, not the venv"
              % location)
        check_eq(version, "0.1.0", "the installed distribution's version")
        result = await in_thread(subprocess.run, [os.path.join(venv, "bin", "brokerclient"),
                                                  "--help"], capture_output=True, text=True,
                                 env=env, timeout=TIMEOUT)
        check_eq(result.returncode, 0, "the brokerclient console script")

        with Node(node_bin, web_socket=True) as node:
            for i, example in enumerate(examples):
                code = example.replace("ws://127.0.0.1:9997", node.url())
                result = await in_thread(subprocess.run, [python, "-c", code],
                                         capture_output=True, text=True, env=env, cwd=tmp,
                                         timeout=TIMEOUT)
                check_eq(result.returncode, 0, "README example %d:\n%s\nstderr: %s"
                         % (i + 1, code, result.stderr))
                print("README example %d printed: %s" % (i + 1, result.stdout.strip()))
                check("/demo/hello" in result.stdout, "README example %d's output: %r"
                      % (i + 1, result.stdout))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    added = sorted(tree(PYTHON_PACKAGE) - before)
    check(not added, "installing left files in %s: %s"
          % (os.path.relpath(PYTHON_PACKAGE, ROOT), ", ".join(added[:10])))


run_tests([test_install], limit=220)
