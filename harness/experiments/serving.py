"""The serving experiment: many clients at once making agents' memory calls (add, search, get, update, delete,
list) to the MCP server's own tools, in process (`MCPServer.call_tool`, no transport) and through the server
(`magbench serve --http` in a subprocess, one real `mcp` client per client), each call timed by its tool. Both
run the same tool functions, so the two differ by the transport alone.

Every client works in a scope of its own from one seeded script (`client_script`), so both systems make the same
calls; each answer is checked as it comes (a hit from another scope, a memory that reads back otherwise than it
was written, a listing that lost one ends the run), so a latency is only reported for a service that kept its word.
"""

from __future__ import annotations

import asyncio
import random
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any, NamedTuple

from harness.experiments.definition import DEFAULT_PLAN, Experiment, RunContext
from harness.measure.clients import Plan, drive_async
from harness.measure.metrics import latency_stats
from harness.measure.server_processes import mcp_server
from harness.output.progress import Progress, silent
from harness.output.results import RunResults, ServingRow
from harness.output.sections.common import SYSTEM
from harness.output.tables import Table, column
from reference import CellularMemory
from reference.encoders import MockEncoder

TOOLS = ("add_memory", "search_memories", "get_memory", "update_memory", "delete_memory", "list_memories")
WORDS = ("tea", "trains", "rain", "chess", "Berlin", "piano", "dentist", "garden")

Call = tuple[str, dict[str, Any]]
"""One tool call: the tool's name and its arguments."""
Answer = Callable[[Call], Awaitable[Any]]
"""A service: a call's answer as the script checks it (`plain`)."""


class Timed(NamedTuple):
    """One call of a client's script: which tool, and how long its answer took (ns)."""

    tool: str
    latency_ns: int


class ServiceBroke(AssertionError):
    """A service answered wrongly under load (another scope's hit, a lost or changed memory, a failed call)."""


def client_script(number: int, calls: int) -> Plan:
    """One client's seeded mix of calls in its own scope, each at once after the last, checking what comes back
    against what it wrote; it returns each call's `Timed`."""
    rng, user = random.Random(number), f"client-{number}"
    mine: dict[str, str] = {}
    timed: list[Timed] = []

    def call(tool: str, arguments: dict[str, Any]) -> Generator[tuple[int, Call], tuple[int, Any], Any]:
        began, answer = yield 0, (tool, {**arguments, "user_id": user})
        timed.append(Timed(tool, time.monotonic_ns() - began))
        return answer

    for step in range(calls):
        roll = rng.random()
        if roll < 0.35 or not mine:
            content = f"note {step} of {user}: {' '.join(rng.sample(WORDS, 3))}"
            mine[(yield from call("add_memory", {"content": content}))] = content
        elif roll < 0.75:
            found = yield from call("search_memories", {"query": " ".join(rng.sample(WORDS, 2)), "k": 10})
            if not set(found) <= set(mine):
                raise ServiceBroke(f"{user} was answered with another scope's memories")
        elif roll < 0.85:
            memory_id = rng.choice(sorted(mine))
            if (yield from call("get_memory", {"memory_id": memory_id})) != mine[memory_id]:
                raise ServiceBroke(f"{user}'s memory {memory_id} does not read back as written")
        elif roll < 0.92:
            memory_id = rng.choice(sorted(mine))
            mine[memory_id] = f"note {step} of {user}, updated: {' '.join(rng.sample(WORDS, 3))}"
            yield from call("update_memory", {"memory_id": memory_id, "content": mine[memory_id]})
        elif roll < 0.97:
            memory_id = rng.choice(sorted(mine))
            yield from call("delete_memory", {"memory_id": memory_id})
            del mine[memory_id]
        else:
            yield from call("list_memories", {"limit": 500})
    listed = yield from call("list_memories", {"limit": 500})
    if listed != mine:
        raise ServiceBroke(f"{user}'s memories are not what it wrote: {len(listed)} listed, {len(mine)} kept")
    return timed


def plain(tool: str, result: Any) -> Any:
    """A tool's answer (a `CallToolResult`, in process or through the server) as the script checks it: an id
    written, the ids found, a content, the memories listed by id; a failed call ends the run."""
    if result.is_error or result.structured_content is None:
        raise ServiceBroke(f"{tool} failed: {result.content}")
    content = result.structured_content
    if tool == "add_memory":
        return content["id"]
    if tool == "search_memories":
        return [hit["id"] for hit in content["results"]]
    if tool == "get_memory":
        return content["content"]
    if tool == "list_memories":
        return {memory["id"]: memory["content"] for memory in content["memories"]}
    return content


Connect = Callable[[], AbstractAsyncContextManager[Answer]]
"""Opens one client's connection to a service."""


async def _run_clients(connect: Connect, clients: int, calls: int) -> tuple[list[Timed], float]:
    """Every client's script at once, each over a connection of its own: the calls timed, and the seconds from
    the first connection to the last answer."""

    async def client(number: int) -> list[Timed]:
        async with connect() as answer:
            return await drive_async(client_script(number, calls), answer)

    start = time.perf_counter()
    done = await asyncio.gather(*(client(number) for number in range(clients)))
    return [call for one in done for call in one], time.perf_counter() - start


def in_process(memory: CellularMemory) -> Connect:
    """The MCP server's tools over `memory`, called in this process (each on a worker thread, as the server runs
    them); a tool's refusal ends the run."""
    from mcp.server.mcpserver.exceptions import ToolError

    from reference.integrations.mcp_server import build_server

    server = build_server(memory)

    async def answer(call: Call) -> Any:
        try:
            return plain(call[0], await server.call_tool(*call))
        except ToolError as error:
            raise ServiceBroke(f"{call[0]} failed in process: {error}") from error

    @asynccontextmanager
    async def connect() -> AsyncIterator[Answer]:
        yield answer

    return connect


def through_mcp(url: str) -> Connect:
    """A real `mcp` client over streamable HTTP to the server at `url`, one per client."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    @asynccontextmanager
    async def connect() -> AsyncIterator[Answer]:
        async with Client(streamable_http_client(url), read_timeout_seconds=120) as client:

            async def answer(call: Call) -> Any:
                return plain(call[0], await client.call_tool(*call))

            yield answer

    return connect


def run_in_process(clients: int, calls: int, directory: Path) -> tuple[list[Timed], float]:
    """Each call's latency and the seconds from the first call to the last."""
    with CellularMemory(path=str(directory), encoder=MockEncoder(384)) as memory:
        timed, wall_s = asyncio.run(_run_clients(in_process(memory), clients, calls))
        memory.check_invariants()
    return timed, wall_s


def run_through_mcp(clients: int, calls: int, directory: Path) -> tuple[list[Timed], float]:
    """Each call's latency and the seconds from the first connection to the last answer (the server's start
    apart)."""
    with mcp_server(directory) as url:
        timed, wall_s = asyncio.run(_run_clients(through_mcp(url), clients, calls))
    with CellularMemory(path=str(directory), encoder=MockEncoder(384)) as memory:
        memory.check_invariants()
    return timed, wall_s


SERVICES = {
    "reference": ("in process, the same tools", run_in_process),
    "reference-mcp": ("MCP, streamable HTTP", run_through_mcp),
}


def serving_rows(systems: Sequence[str], clients: int, calls: int, progress: Progress = silent) -> list[ServingRow]:
    """The services named (of `SERVICES`) through the same scripts, one after the other, each on a new embedded
    store."""
    rows = []
    for system in progress(list(systems), f"serving ({clients} clients × {calls} calls)"):
        transport, run = SERVICES[system]
        with tempfile.TemporaryDirectory(prefix="magbench-serving-") as directory:
            timed, wall_s = run(clients, calls, Path(directory))
        for tool in TOOLS:
            latencies = [call.latency_ns for call in timed if call.tool == tool]
            if latencies:
                stats = latency_stats(latencies)
                rows.append(
                    ServingRow(
                        system, transport, clients, tool, stats.queries, stats.p50_ms, stats.p99_ms, len(timed) / wall_s
                    )
                )
    return rows


SYSTEMS = ("reference", "reference-mcp")
"""The engine in process and through its MCP server (`SERVICES`)."""


def run(context: RunContext) -> list[ServingRow]:
    """Many clients at once making agents' memory calls: the engine in process and through its MCP server."""
    plan = context.plan
    return serving_rows(context.systems_of(SERVING), plan.serving_clients, plan.serving_calls, context.progress)


SECONDS = 60.0
"""A default run's serving, on the machine the defaults were measured on (`harness.experiments.definition`)."""


def work(context: RunContext) -> float:
    plan, default = context.plan, DEFAULT_PLAN
    each, default_each = (p.serving_clients * p.serving_calls for p in (plan, default))
    return context.scaled(SECONDS, SERVING, each, default_each)


def table(results: RunResults) -> list[Table]:
    if not results.serving:
        return []
    return [
        Table(
            "serving",
            "Serving: many clients at once, the MCP tools in process and through the MCP server",
            "Each client makes a seeded mix of agents' memory calls in a scope of its own (mostly writes and "
            "searches; gets, updates, deletes and listings), all clients at once, to the MCP server's own tools: "
            "in process called directly (each call on a worker thread, as the server runs it), through the server "
            "each a real `mcp` client over streamable HTTP to `magbench serve --http` (both on an embedded store, "
            "the mock encoder), so the two differ by the transport alone. Every answer is checked as it comes "
            "(no hit from another scope, every memory read back as written, nothing lost); `calls/s` counts every "
            "tool's calls together. A call's latency includes its wait for the others: these are a service's "
            "latencies, not one core's.",
            (
                SYSTEM,
                column("transport", "transport"),
                column("clients", "clients"),
                column("tool", "tool"),
                column("calls", "calls"),
                column("p50 (ms)", "p50_ms"),
                column("p99 (ms)", "p99_ms"),
                column("calls/s (every tool)", "calls_per_s"),
            ),
            [asdict(row) for row in results.serving],
        )
    ]


SERVING = Experiment(
    "serving",
    section="serving",
    data=["default"],
    run=run,
    systems=SYSTEMS,
    capability=True,
    work=work,
    tables=(table,),
)
