"""A real Chroma server (`chroma run`) on a free 127.0.0.1 port, started and stopped by the tests."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class ChromaServer:
    def __init__(self, path: Path, port: int | None = None) -> None:
        self.path = path
        self.port = port or free_port()
        self.host = "127.0.0.1"
        self._process: subprocess.Popen | None = None
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
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"chroma run exited with {self._process.returncode}")
            try:
                urllib.request.urlopen(f"http://{self.address}/api/v2/heartbeat", timeout=1).close()
                return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"chroma run did not answer on {self.address} within {timeout:.0f} s")

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
