"""Servers the harness starts on a free 127.0.0.1 port and stops again: a Chroma server (`chroma run`) and the
engine's MCP server (`magbench serve --http`), each over a directory of its own."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


def free_port() -> int:
    """A port free on the loopback interface now (the OS picks it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def connect(host: str, port: int) -> None:
    """An `OSError` unless a server accepts a connection at `host`:`port` (`await_answer`'s probe)."""
    socket.create_connection((host, port), timeout=0.5).close()


def await_answer(process: subprocess.Popen[bytes], probe: Callable[[], object], name: str, timeout: float) -> None:
    """Returns once `probe` runs without an `OSError` (the server `process` answers); a `RuntimeError` if the process
    exits first (with the end of its stderr when that is piped) or `timeout` seconds pass (then it is killed, so a
    server that never answered is not left running)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            error = process.stderr.read().decode(errors="replace")[-2000:].strip() if process.stderr else ""
            raise RuntimeError(f"{name} exited with {process.returncode}" + (f": {error}" if error else ""))
        try:
            probe()
            return
        except OSError:
            time.sleep(0.1)
    process.kill()
    process.wait()
    raise RuntimeError(f"{name} did not answer within {timeout:.0f} s")


class ChromaServer:
    """`chroma run --path DIR` on 127.0.0.1, started by `start` (or `with`), which returns once it answers."""

    def __init__(self, path: Path, port: int | None = None) -> None:
        self.path = path
        self.port = port or free_port()
        self.host = "127.0.0.1"
        self._process: subprocess.Popen[bytes] | None = None
        executable = Path(sys.executable).with_name("chroma")
        self._command = [
            str(executable) if executable.exists() else shutil.which("chroma") or "chroma",
            "run",
            "--path",
            str(path),
            "--host",
            self.host,
            "--port",
            str(self.port),
        ]

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self, timeout: float = 60.0) -> ChromaServer:
        env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
        self._process = subprocess.Popen(self._command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        heartbeat = f"http://{self.address}/api/v2/heartbeat"
        await_answer(self._process, lambda: urllib.request.urlopen(heartbeat, timeout=1).close(), "chroma run", timeout)
        return self

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = None

    def __enter__(self) -> ChromaServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


@contextmanager
def mcp_server(directory: Path, timeout: float = 120.0) -> Iterator[str]:
    """`magbench serve --http` on a free loopback port over an embedded store; yields its URL."""
    port = free_port()
    command = [sys.executable, "-m", "harness.cli", "serve", "--http", "--port", str(port), "--encoder", "mock"]
    process = subprocess.Popen([*command, "--db", str(directory)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        await_answer(process, lambda: connect("127.0.0.1", port), "magbench serve", timeout)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=60)
