"""The serving experiment: many clients at once making agents' memory calls (add, search, get, update, delete,
list), against the engine in process (one thread per client) and through its MCP server (`magbench serve
--http` in a subprocess, one real `mcp` client per client), each call timed by its tool.

Every client works in a scope of its own from one seeded script (`client_script`), so both systems make the same
calls; each answer is checked as it comes (a hit from another scope, a memory that reads back otherwise than it
was written, a listing that lost one ends the run), so a latency is only reported for a service that kept its word.
"""

from __future__ import annotations

import asyncio
import random
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Generator, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from harness.experiments.definition import DEFAULT_PLAN, Experiment, RunContext
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
Script = Generator[Call, Any, None]
"""A client's calls: it yields (tool, arguments) and is sent each answer (a written id for add_memory)."""


class ServiceBroke(AssertionError):
    """A service answered wrongly under load (another scope's hit, a lost or changed memory)."""


def client_script(number: int, calls: int) -> Script:
    """One client's seeded mix of calls in its own scope, checking what comes back against what it wrote."""
    rng, user = random.Random(number), f"client-{number}"
    mine: dict[str, str] = {}
    for step in range(calls):
        roll = rng.random()
        if roll < 0.35 or not mine:
            content = f"note {step} of {user}: {' '.join(rng.sample(WORDS, 3))}"
            mine[(yield "add_memory", {"content": content, "user_id": user})] = content
        elif roll < 0.75:
            found = yield "search_memories", {"query": " ".join(rng.sample(WORDS, 2)), "k": 10, "user_id": user}
            if not set(found) <= set(mine):
                raise ServiceBroke(f"{user} was answered with another scope's memories")
        elif roll < 0.85:
            memory_id = rng.choice(sorted(mine))
            if (yield "get_memory", {"memory_id": memory_id, "user_id": user}) != mine[memory_id]:
                raise ServiceBroke(f"{user}'s memory {memory_id} does not read back as written")
        elif roll < 0.92:
            memory_id = rng.choice(sorted(mine))
            mine[memory_id] = f"note {step} of {user}, updated: {' '.join(rng.sample(WORDS, 3))}"
            yield "update_memory", {"memory_id": memory_id, "content": mine[memory_id], "user_id": user}
        elif roll < 0.97:
            memory_id = rng.choice(sorted(mine))
            yield "delete_memory", {"memory_id": memory_id, "user_id": user}
            del mine[memory_id]
        else:
            yield "list_memories", {"limit": 500, "user_id": user}
    listed = yield "list_memories", {"limit": 500, "user_id": user}
    if listed != mine:
        raise ServiceBroke(f"{user}'s memories are not what it wrote: {len(listed)} listed, {len(mine)} kept")


Timings = dict[str, list[int]]


def drive(script: Script, answer: Callable[[str, dict[str, Any]], Any], timings: Timings) -> None:
    """Run a script against a synchronous service, timing each call by its tool."""
    try:
        call = next(script)
        while True:
            start = time.perf_counter_ns()
            result = answer(*call)
            timings[call[0]].append(time.perf_counter_ns() - start)
            call = script.send(result)
    except StopIteration:
        return


class InProcess:
    """The engine's own API, called from each client's thread (the tools' plain-value answers)."""

    def __init__(self, memory: CellularMemory) -> None:
        self.memory = memory

    def answer(self, tool: str, arguments: dict[str, Any]) -> Any:
        memory, scope = self.memory, f"user:{arguments['user_id']}"
        if tool == "add_memory":
            return memory.add(arguments["content"], scope=scope)[0]
        if tool == "search_memories":
            return [hit.id for hit in memory.search(arguments["query"], arguments["k"], scope=scope)]
        if tool == "get_memory":
            record = memory.get(arguments["memory_id"])
            return record.text if record.scope == scope else None
        if tool == "update_memory":
            return memory.update(arguments["memory_id"], text=arguments["content"], scope=scope)
        if tool == "delete_memory":
            return memory.delete(arguments["memory_id"], scope=scope)
        ids = sorted(memory.ids(scope=scope))[: arguments["limit"]]
        return {record.id: record.text for record in memory.get_many(ids)}


def run_in_process(clients: int, calls: int, directory: Path) -> tuple[Timings, float]:
    """Each tool's latencies and the seconds from the first call to the last."""
    timings: Timings = defaultdict(list)
    failures: list[BaseException] = []
    with CellularMemory(path=str(directory), encoder=MockEncoder(384)) as memory:
        service = InProcess(memory)
        per_client: list[Timings] = [defaultdict(list) for _ in range(clients)]

        def client(number: int) -> None:
            try:
                drive(client_script(number, calls), service.answer, per_client[number])
            except BaseException as error:  # re-raised below, in the caller's thread
                failures.append(error)

        threads = [threading.Thread(target=client, args=(number,)) for number in range(clients)]
        start = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall_s = time.perf_counter() - start
        memory.check_invariants()
    if failures:
        raise failures[0]
    for one in per_client:
        for tool, latencies in one.items():
            timings[tool] += latencies
    return timings, wall_s


def _plain(tool: str, result: Any) -> Any:
    """An MCP tool's structured answer as the script checks it (the in-process service's plain values)."""
    if tool == "add_memory":
        return result["id"]
    if tool == "search_memories":
        return [hit["id"] for hit in result["results"]]
    if tool == "get_memory":
        return result["content"]
    if tool == "list_memories":
        return {memory["id"]: memory["content"] for memory in result["memories"]}
    return result


async def _mcp_client(url: str, script: Script, timings: Timings) -> None:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with Client(streamable_http_client(url), read_timeout_seconds=120) as client:
        try:
            call = next(script)
            while True:
                start = time.perf_counter_ns()
                result = await client.call_tool(call[0], call[1])
                timings[call[0]].append(time.perf_counter_ns() - start)
                if result.is_error:
                    raise ServiceBroke(f"{call[0]} failed through the MCP server: {result.content}")
                call = script.send(_plain(call[0], result.structured_content))
        except StopIteration:
            return


def run_through_mcp(clients: int, calls: int, directory: Path) -> tuple[Timings, float]:
    """Each tool's latencies and the seconds from the first call to the last (the server's start apart)."""
    timings: Timings = defaultdict(list)
    with mcp_server(directory) as url:

        async def everyone() -> None:
            await asyncio.gather(*(_mcp_client(url, client_script(n, calls), timings) for n in range(clients)))

        start = time.perf_counter()
        asyncio.run(everyone())
        wall_s = time.perf_counter() - start
    with CellularMemory(path=str(directory), encoder=MockEncoder(384)) as memory:
        memory.check_invariants()
    return timings, wall_s


SERVICES = {"reference": ("in process", run_in_process), "reference-mcp": ("MCP, streamable HTTP", run_through_mcp)}


def serving_rows(systems: Sequence[str], clients: int, calls: int, progress: Progress = silent) -> list[ServingRow]:
    """The services named (of `SERVICES`) through the same scripts, one after the other, each on a new embedded
    store."""
    rows = []
    for system in progress(list(systems), f"serving ({clients} clients × {calls} calls)"):
        transport, run = SERVICES[system]
        with tempfile.TemporaryDirectory(prefix="magbench-serving-") as directory:
            timings, wall_s = run(clients, calls, Path(directory))
        total = sum(len(latencies) for latencies in timings.values())
        for tool in TOOLS:
            if timings.get(tool):
                stats = latency_stats(timings[tool])
                rows.append(
                    ServingRow(
                        system, transport, clients, tool, stats.queries, stats.p50_ms, stats.p99_ms, total / wall_s
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
    plan = context.plan
    share = plan.serving_clients * plan.serving_calls * len(context.systems_of(SERVING))
    return SECONDS * share / (DEFAULT_PLAN.serving_clients * DEFAULT_PLAN.serving_calls * 2)


def table(results: RunResults) -> list[Table]:
    if not results.serving:
        return []
    return [
        Table(
            "serving",
            "Serving: many clients at once, the engine in process and through its MCP server",
            "Each client makes a seeded mix of agents' memory calls in a scope of its own (mostly writes and "
            "searches; gets, updates, deletes and listings), all clients at once: in process each on its own "
            "thread, through the server each a real `mcp` client over streamable HTTP to `magbench serve --http` "
            "(both on an embedded store, the mock encoder). Every answer is checked as it comes (no hit from another "
            "scope, every memory read back as written, nothing lost); `calls/s` counts every tool's calls "
            "together. A call's latency includes its wait for the others: these are a service's latencies, not "
            "one core's.",
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
