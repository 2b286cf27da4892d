"""`magbench serve` as a subprocess (stdio or HTTP on a free 127.0.0.1 port) and real `mcp` clients of it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from harness.measure.server_processes import await_answer, connect, free_port

SERVE = [sys.executable, "-m", "harness.cli", "serve", "--encoder", "mock"]
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}


class HttpMemoryServer:
    """`magbench serve --http` on its own port, with the given extra arguments."""

    def __init__(self, *args: str, host: str = "127.0.0.1") -> None:
        self.host, self.port = host, free_port()
        self.url = f"http://{host}:{self.port}/mcp"
        self.command = [*SERVE, "--http", "--host", host, "--port", str(self.port), *args]
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 600.0) -> HttpMemoryServer:
        self.process = subprocess.Popen(self.command, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        await_answer(self.process, lambda: connect(self.host, self.port), "magbench serve", timeout)
        return self

    def stop(self) -> None:
        """A graceful stop (SIGTERM), as a service manager stops it."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=30)

    def kill(self) -> None:
        """SIGKILL: no chance to flush or close anything."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)

    def __enter__(self) -> HttpMemoryServer:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()


@asynccontextmanager
async def http_client(
    url: str, token: str | None = None, headers: dict[str, str] | None = None
) -> AsyncIterator[Client]:
    headers = {**(headers or {}), **({} if token is None else {"Authorization": f"Bearer {token}"})}
    async with (
        create_mcp_http_client(headers=headers) as http,
        Client(streamable_http_client(url, http_client=http), read_timeout_seconds=60) as client,
    ):
        yield client


@asynccontextmanager
async def stdio_client(args: Sequence[str] = ()) -> AsyncIterator[Client]:
    parameters = StdioServerParameters(command=SERVE[0], args=[*SERVE[1:], *args], env=ENV, cwd=str(Path.cwd()))
    async with Client(parameters) as client:
        yield client


async def call(client: Client, tool: str, **arguments: Any) -> Any:
    """A tool's structured result; a tool error fails with the server's message."""
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        raise ToolFailed(tool, result.content[0].text if result.content else "")  # type: ignore[union-attr]
    return result.structured_content


async def refused(client: Client, tool: str, **arguments: Any) -> str:
    """The message of a call that must fail as a tool error."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool}({arguments}) succeeded: {result.structured_content}"
    return result.content[0].text  # type: ignore[union-attr]


class ToolFailed(AssertionError):
    def __init__(self, tool: str, message: str) -> None:
        super().__init__(f"{tool}: {message}")
        self.message = message


def write_tokens(path: Path, grants: dict[str, list[dict[str, str]]]) -> Path:
    path.write_text(json.dumps(grants), encoding="utf-8")
    return path
