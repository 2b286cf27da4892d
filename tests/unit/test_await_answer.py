"""`await_answer`, the one wait every started server goes through: it returns once the server answers, and says why
when the process ends first or never answers."""

import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from harness.measure.server_processes import await_answer, connect, free_port


@contextmanager
def started(code: str) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE)
    try:
        yield process
    finally:
        process.kill()
        process.wait()


def test_returns_once_the_port_accepts():
    with socket.socket() as listening, started("import time; time.sleep(30)") as process:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        await_answer(process, lambda: connect("127.0.0.1", port), "server", timeout=10)
        assert process.poll() is None


def test_a_process_that_exits_first_is_an_error_with_its_stderr():
    exits = "import sys; sys.stderr.write('no such option'); sys.exit(3)"
    with started(exits) as process, pytest.raises(RuntimeError, match="server exited with 3: no such option"):
        await_answer(process, lambda: connect("127.0.0.1", free_port()), "server", timeout=30)


def test_a_server_that_never_answers_is_an_error_after_the_timeout_and_killed():
    with started("import time; time.sleep(30)") as process:
        with pytest.raises(RuntimeError, match="server did not answer within 1 s"):
            await_answer(process, lambda: connect("127.0.0.1", free_port()), "server", timeout=1)
        assert process.poll() is not None
