"""`magbench serve --postgres DSN --namespace NAME` through the real `mcp` client: every tool on the PostgreSQL store,
one instance per namespace (a second is refused, one on another namespace serves), and what was acknowledged is
in the database for the next instance."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("mcp", reason="the serve extra: pip install 'magnetic-bench[serve]'")

from reference import CellularMemory, MemoryConfig
from reference.encoders import MockEncoder
from tests.serve.mcp_servers import HttpMemoryServer, call, http_client
from tests.serve.test_mcp_server import every_tool


def test_every_tool_on_postgres_one_instance_per_namespace(postgres_server):
    dsn = postgres_server.dsn
    with HttpMemoryServer("--postgres", dsn, "--namespace", "served") as server:
        asyncio.run(every_tool_at(server.url))
        with pytest.raises(RuntimeError, match="served by another live process"):
            HttpMemoryServer("--postgres", dsn, "--namespace", "served").start()
        with HttpMemoryServer("--postgres", dsn, "--namespace", "other") as other:
            assert asyncio.run(contents(other.url, "alice")) == []
    config = MemoryConfig(namespace="served")
    with CellularMemory(dsn=dsn, encoder=MockEncoder(), config=config) as memory:  # stopped: its namespace is free
        assert sorted(memory.get(cell).text for cell in memory.ids()) == ["Alice moved to Berlin", "Bob lives in Rome"]
        memory.check_invariants()


async def every_tool_at(url: str) -> None:
    async with http_client(url) as client:
        await every_tool(client)


async def contents(url: str, user: str) -> list[str]:
    async with http_client(url) as client:
        return [m["content"] for m in (await call(client, "list_memories", user_id=user))["memories"]]
