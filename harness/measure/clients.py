"""Concurrent clients that search one system for a fixed time: threads of this process for a system in it, and
processes of their own for a server (no client shares another's interpreter, as VectorDBBench runs its clients).

Every client searches its share of the queries in a loop, from a common start to a common stop, and keeps what
each search returned and when it began (`Searched`, on the monotonic clock, which processes share), so that the
answers can be scored afterwards against the cells written before each began; one more client may write cells of a
pool at a fixed rate meanwhile (`Written`). A client's work is a plan (`searches`, `writes`) that one thread drives
(`drive`) or one process's event loop (`drive_async`). `ClientPool` keeps its processes, each with one connection
(`Connection`: Chroma's HTTP client, or an MCP client over streamable HTTP), across runs.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
import time
import traceback
from collections.abc import Awaitable, Callable, Generator
from contextlib import AsyncExitStack, suppress
from dataclasses import dataclass
from multiprocessing.connection import Connection as Pipe
from typing import Any, Literal, NamedTuple

from harness.protocol import Document, Query, SearchHit, vector_of


class Searched(NamedTuple):
    """One search by one client: when it began (monotonic ns), how long it took, which query, what came back."""

    started_ns: int
    latency_ns: int
    query: int
    hits: list[SearchHit]


class Written(NamedTuple):
    """One write of one cell from the pool: when it was acknowledged (monotonic ns), which cell, the id written."""

    acknowledged_ns: int
    cell: int
    id: str


Plan = Generator[tuple[int, Any], tuple[int, Any], list[Any]]
"""A client's work: it yields (not before this monotonic ns, the item to call with) and is sent (when the call
began, its answer); it returns what it recorded. One loop runs every plan (`drive_async`), in a thread (`drive`)
or a process's event loop; the serving experiment's scripts are plans too."""


def searches(queries: int, first: int, start_ns: int, stop_ns: int) -> Plan:
    """Query after query (from `first`, round the list) from the start, each as soon as the last one answered;
    the searches that began before the stop, and at least one (a client held up past the stop by a machine loaded
    beyond its cores still searches once, so every level has figures)."""
    done: list[Searched] = []
    query, due = first, start_ns
    while True:
        began, hits = yield due, query
        ended = time.monotonic_ns()
        if began >= stop_ns and done:
            return done
        done.append(Searched(began, ended - began, query, hits))
        query, due = (query + 1) % queries, ended


def writes(first: int, count: int, rate: float, start_ns: int, stop_ns: int) -> Plan:
    """Cells `first`, `first` + 1, … of the pool, one every 1 / `rate` seconds from the start (a write that falls
    behind its time goes at once), until the stop or the pool's end."""
    done = []
    for number, cell in enumerate(range(first, count)):
        due = start_ns + round(number * 1e9 / rate)
        if due >= stop_ns:
            break
        _, written = yield due, cell
        done.append(Written(time.monotonic_ns(), cell, written))
    return done


def drive(plan: Plan, call: Callable[[Any], Any]) -> list[Any]:
    """Run a plan in this thread: `drive_async` with a call and a sleep that block, so it never suspends and runs
    to its end on its first step, with no event loop (a system's call may start one of its own)."""

    async def answer(item: Any) -> Any:
        return call(item)

    async def pause(seconds: float) -> None:
        time.sleep(seconds)

    running = drive_async(plan, answer, pause)
    try:
        running.send(None)
    except StopIteration as end:
        return list(end.value)
    running.close()
    raise RuntimeError("a plan driven in a thread waited on an event loop")


async def drive_async(
    plan: Plan, call: Callable[[Any], Awaitable[Any]], pause: Callable[[float], Awaitable[None]] = asyncio.sleep
) -> list[Any]:
    """Run a plan: each item called when it is due (at once if it is), the answer sent back with when the call
    began. The one loop that drives every client, in an event loop or (`drive`) in a thread."""
    try:
        due, item = next(plan)
        while True:
            wait_ns = due - time.monotonic_ns()
            if wait_ns > 0:
                await pause(wait_ns / 1e9)
            began = time.monotonic_ns()
            due, item = plan.send((began, await call(item)))
    except StopIteration as end:
        return list(end.value)


def start_of(client: int, clients: int, queries: int) -> int:
    """The query a client begins with: the clients spread evenly over the queries."""
    return client * queries // clients


@dataclass(frozen=True)
class Load:
    """What one run of clients does: `clients` clients searching from `start_ns` to `stop_ns` and, with a
    `rate`, cells of the pool written from `first_cell` on at that many a second meanwhile."""

    clients: int
    start_ns: int
    stop_ns: int
    rate: float = 0.0
    first_cell: int = 0


def run_threads(
    search: Callable[[int], list[SearchHit]], write: Callable[[int], str], queries: int, pool: int, load: Load
) -> tuple[list[Searched], list[Written]]:
    """The load with each client a thread of this process (and the writer one more): what was searched, written."""
    plans = [
        searches(queries, start_of(n, load.clients, queries), load.start_ns, load.stop_ns) for n in range(load.clients)
    ]
    calls: list[Callable[[int], Any]] = [search] * load.clients
    if load.rate:
        plans.append(writes(load.first_cell, pool, load.rate, load.start_ns, load.stop_ns))
        calls.append(write)
    done: list[list[Any]] = [[] for _ in plans]
    failures: list[BaseException] = []

    def client(number: int) -> None:
        try:
            done[number] = drive(plans[number], calls[number])
        except BaseException as error:  # re-raised in the caller's thread
            failures.append(error)

    threads = [threading.Thread(target=client, args=(number,)) for number in range(len(plans))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    return [s for one in done[: load.clients] for s in one], done[load.clients] if load.rate else []


@dataclass(frozen=True)
class Connection:
    """What a client process connects to: a Chroma server's collection (searched by the query vectors) or an MCP
    server's memory tools (searched by the query texts in `target`'s scope); the cells of the pool it may write."""

    kind: Literal["chroma", "mcp"]
    address: str
    """host:port of a Chroma server, or the URL of an MCP server."""
    target: str
    """The Chroma collection, or the MCP user whose memories are searched."""
    queries: list[Query]
    pool: list[Document]
    k: int
    """Hits each search asks for."""


class ClientFailed(RuntimeError):
    """A client process failed; the message holds its traceback."""


class ClientPool:
    """`size` client processes, spawned (nothing of this process's threads or locks is inherited); the last
    one writes while the others search."""

    def __init__(self, size: int) -> None:
        context = multiprocessing.get_context("spawn")
        self._pipes: list[Pipe] = []
        self._processes: list[Any] = []
        for _ in range(size):
            mine, theirs = context.Pipe()
            process = context.Process(target=_client_process, args=(theirs,), daemon=True)
            process.start()
            self._pipes.append(mine)
            self._processes.append(process)

    def connect(self, connection: Connection) -> None:
        """Every process opens its connection (closing the one it had)."""
        for pipe in self._pipes:
            pipe.send(("connect", connection))
        for pipe in self._pipes:
            self._answer(pipe)

    def run(self, load: Load) -> tuple[list[Searched], list[Written]]:
        """The load, each client a process: what was searched, and written."""
        if load.clients >= len(self._pipes):
            raise ValueError(f"{load.clients} clients and a writer asked of a pool of {len(self._pipes)} processes")
        writer = self._pipes[-1]
        if load.rate:
            writer.send(("write", load))
        for number, pipe in enumerate(self._pipes[: load.clients]):
            pipe.send(("search", number, load))
        searched = [s for pipe in self._pipes[: load.clients] for s in self._answer(pipe)]
        return searched, self._answer(writer) if load.rate else []

    def close(self) -> None:
        for pipe in self._pipes:
            with suppress(OSError):
                pipe.send(("stop",))
        for process in self._processes:
            process.join(timeout=30)
            if process.is_alive():
                process.terminate()
                process.join()

    def __enter__(self) -> ClientPool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @staticmethod
    def _answer(pipe: Pipe) -> Any:
        status, value = pipe.recv()
        if status == "error":
            raise ClientFailed(f"a client process failed:\n{value}")
        return value


def _client_process(pipe: Pipe) -> None:
    """A client process: connect, search or write when told, until told to stop."""
    asyncio.run(_serve(pipe))


async def _serve(pipe: Pipe) -> None:
    calls: tuple[Callable[[int], Awaitable[Any]], Callable[[int], Awaitable[Any]]] | None = None
    connection: Connection | None = None
    opened = AsyncExitStack()
    try:
        while True:
            command, *arguments = await asyncio.to_thread(pipe.recv)
            if command == "stop":
                return
            try:
                if command == "connect":
                    await opened.aclose()
                    connection = arguments[0]
                    calls = await _connect(opened, connection)
                    pipe.send(("ok", None))
                    continue
                if calls is None or connection is None:
                    raise RuntimeError(f"asked to {command} before connecting")
                search, write = calls
                if command == "search":
                    number, load = arguments
                    first, queries = start_of(number, load.clients, len(connection.queries)), len(connection.queries)
                    plan = searches(queries, first, load.start_ns, load.stop_ns)
                    pipe.send(("ok", await drive_async(plan, search)))
                else:
                    (load,) = arguments
                    plan = writes(load.first_cell, len(connection.pool), load.rate, load.start_ns, load.stop_ns)
                    pipe.send(("ok", await drive_async(plan, write)))
            except Exception:
                pipe.send(("error", traceback.format_exc()))
    finally:
        await opened.aclose()


async def _connect(
    stack: AsyncExitStack, connection: Connection
) -> tuple[Callable[[int], Awaitable[list[SearchHit]]], Callable[[int], Awaitable[str]]]:
    """Search and write functions over one new connection, closed with `stack`."""
    queries, pool = connection.queries, connection.pool
    if connection.kind == "chroma":
        import chromadb
        from chromadb.config import Settings

        host, _, port = connection.address.rpartition(":")
        client: Any = chromadb.HttpClient(host=host, port=int(port), settings=Settings(anonymized_telemetry=False))
        collection = client.get_collection(connection.target)

        async def chroma_search(query: int) -> list[SearchHit]:
            found = collection.query(
                query_embeddings=vector_of(queries[query])[None, :], n_results=connection.k, include=["distances"]
            )
            return [SearchHit(i, 1.0 - d) for i, d in zip(found["ids"][0], found["distances"][0])]

        async def chroma_write(cell: int) -> str:
            doc = pool[cell]
            collection.add(ids=[doc.id], embeddings=vector_of(doc)[None, :], documents=[doc.text])
            return doc.id

        return chroma_search, chroma_write
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    mcp = await stack.enter_async_context(Client(streamable_http_client(connection.address), read_timeout_seconds=120))

    async def call(tool: str, arguments: dict[str, Any]) -> Any:
        result = await mcp.call_tool(tool, {**arguments, "user_id": connection.target})
        if result.is_error or result.structured_content is None:
            raise RuntimeError(f"{tool} failed through the MCP server: {result.content}")
        return result.structured_content

    async def mcp_search(query: int) -> list[SearchHit]:
        found = await call("search_memories", {"query": queries[query].text, "k": connection.k})
        return [SearchHit(hit["id"], hit["score"]) for hit in found["results"]]

    async def mcp_write(cell: int) -> str:
        written: str = (await call("add_memory", {"content": pool[cell].text}))["id"]
        return written

    return mcp_search, mcp_write
