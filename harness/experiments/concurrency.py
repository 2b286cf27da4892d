"""Concurrency, as VectorDBBench measures it: C clients (`LEVELS`) searching one built system at once for a fixed
time, QPS and p50 / p99 per C, for searches alone and then while cells are written at a fixed rate (and the recall
of the searches made while writing).

A system in the harness's process is searched by threads; one that does not declare "threads" is guarded by a
readers–writer lock (searches together, a write alone), as a server built on it would have to be. A server is
searched by client processes of their own (`clients.ClientPool`), each with its own connection: the engine's MCP
server (`reference-mcp`: `magbench serve --http` over a store built beforehand, searched by text) and a Chroma
server (`chroma-server`: `chroma run`, one flat collection, searched by vector), both started here on 127.0.0.1.

Every system holds the same cells (agents' notes, `MockEncoder` vectors, so the MCP server encodes a query text
into the vector the others are given) and writes the same pool of further cells, one a write. Each answer is
checked, and scored against exact search over the cells written before its search began (a hit of a cell written
during it counts when it scores as well as the 10th): recall is the share of its hits scoring at least the exact
10th best (ann-benchmarks' rule). QPS counts every client's searches over the time from the common start to the
last answer. A search's latency includes its wait for the others: these are a service's latencies, not one core's.
"""

from __future__ import annotations

import bisect
import math
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

import numpy as np
from readerwriterlock import rwlock

from harness.data.encoding import encode_evalset
from harness.data.evalset import EvalSet
from harness.data.generated import notes_evalset
from harness.measure.checking import check_hits
from harness.measure.clients import ClientPool, Connection, Load, Searched, Written, run_threads
from harness.measure.metrics import latency_stats, threshold_recall
from harness.measure.timing import K, one_core, open_system, warm
from harness.measure.server_processes import ChromaServer, mcp_server
from harness.output.progress import Progress, silent
from harness.output.results import ConcurrencyRow
from harness.protocol import Document, Query, SearchHit, vector_of
from reference.encoders import MockEncoder

LEVELS = (1, 2, 4, 8)
USER = "bench"
"""The MCP user whose memories the server's clients search and write."""
LEAD_S = 0.2
"""From telling the clients to the common start: every client is waiting before it."""
WARM_S = 0.5
"""An untimed run of every client, and writes, before the levels: connections, caches and compiled code warm."""
ENCODER = MockEncoder(384)


@dataclass(frozen=True)
class Workload:
    """The cells every system is built on, the pool of cells written while searching, and the queries (text and
    vector)."""

    data: EvalSet
    cells: int

    @property
    def docs(self) -> list[Document]:
        return self.data.docs[: self.cells]

    @property
    def pool(self) -> list[Document]:
        return self.data.docs[self.cells :]


def workload(cells: int, pool: int, queries: int) -> Workload:
    """Agents' notes (synthetic), encoded by `ENCODER`: `cells` to build on, `pool` more to write."""
    return Workload(encode_evalset(notes_evalset(cells + pool, queries=queries), ENCODER, cache=None), cells)


class Target(Protocol):
    """One built system that clients search: it runs a `Load` and says what was searched and written."""

    name: str
    transport: str

    def run(self, load: Load) -> tuple[list[Searched], list[Written]]: ...


class InProcess:
    """A system of the registry in this process, its clients threads."""

    transport = "threads in process"

    def __init__(self, spec: str, work: Workload, workdir: Path) -> None:
        warm(spec, work.data, ENCODER.name)
        self.system = open_system(spec, work.data, encoder=ENCODER.name, workdir=workdir)
        self.name, self.work = self.system.name, work
        self.system.add(work.docs)
        lock = None if "threads" in self.system.capabilities else rwlock.RWLockFair()
        self._reading = lock.gen_rlock if lock else nullcontext
        self._writing = lock.gen_wlock if lock else nullcontext

    def run(self, load: Load) -> tuple[list[Searched], list[Written]]:
        queries, pool = self.work.data.queries, self.work.pool
        return run_threads(
            lambda q: self._search(queries[q]), lambda c: self._write(pool[c]), len(queries), len(pool), load
        )

    def _search(self, query: Query) -> list[SearchHit]:
        with self._reading():
            return self.system.search(query, k=K)

    def _write(self, doc: Document) -> str:
        with self._writing():
            self.system.add([doc])
        return doc.id

    def close(self) -> None:
        self.system.close()


class Served:
    """A server started here, its clients the processes of a `ClientPool` connected to it."""

    def __init__(self, name: str, transport: str, pool: ClientPool) -> None:
        self.name, self.transport, self._pool = name, transport, pool

    def run(self, load: Load) -> tuple[list[Searched], list[Written]]:
        return self._pool.run(load)


@contextmanager
def mcp_target(work: Workload, workdir: Path, pool: ClientPool) -> Iterator[Served]:
    """The engine's MCP server over an embedded store built first with every cell in `USER`'s scope."""
    from reference.integrations.mcp_server import scope_name

    scoped = [replace(doc, scope=scope_name({"user_id": USER}, USER)) for doc in work.docs]
    store = open_system("reference-persistent", work.data, encoder=ENCODER.name, workdir=workdir)
    try:
        store.add(scoped)
    finally:
        store.close()
    with mcp_server(workdir / "memory") as url:
        pool.connect(Connection("mcp", url, USER, work.data.queries, work.pool, K))
        yield Served("reference-mcp", "processes: MCP over streamable HTTP", pool)


@contextmanager
def chroma_target(work: Workload, workdir: Path, pool: ClientPool) -> Iterator[Served]:
    """A Chroma server holding every cell in one collection, built as `flat-chroma` builds its own."""
    with ChromaServer(workdir / "chroma") as server:
        system = open_system(
            "flat-chroma", work.data, encoder=ENCODER.name, workdir=workdir, options={"server": server.address}
        )
        try:
            system.add(work.docs)
        finally:
            system.close()
        pool.connect(Connection("chroma", server.address, "flat", work.data.queries, work.pool, K))
        yield Served("chroma-server", "processes: Chroma over HTTP", pool)


SERVERS: dict[str, Callable[[Workload, Path, ClientPool], AbstractContextManager[Served]]] = {
    "reference-mcp": mcp_target,
    "chroma-server": chroma_target,
}
"""Systems that are servers, by name: any other name is a system of the registry, searched in this process."""


class Truth:
    """Exact search over the cells, and over the pool's first cells as they are written."""

    def __init__(self, work: Workload) -> None:
        queries = np.stack([vector_of(q) for q in work.data.queries])
        base = queries @ np.stack([vector_of(d) for d in work.docs]).T
        self.best = np.sort(np.partition(base, -K, axis=1)[:, -K:], axis=1)
        self.pool = (
            queries @ np.stack([vector_of(d) for d in work.pool]).T if work.pool else np.zeros((len(queries), 0))
        )
        self.queries = queries
        self.vector_of = {doc.id: vector_of(doc) for doc in work.data.docs}

    def kth(self, query: int, written: int) -> float:
        """The exact 10th best similarity of a query over the cells and the pool's first `written` cells."""
        values = np.concatenate([self.best[query], self.pool[query, :written]])
        return float(np.partition(values, -K)[-K])

    def similarities(self, query: int, ids: list[str]) -> np.ndarray:
        return np.asarray([self.vector_of[i] @ self.queries[query] for i in ids], dtype=np.float32)


def concurrency_rows(
    systems: tuple[str, ...],
    *,
    cells: int,
    queries: int,
    levels: tuple[int, ...] = LEVELS,
    seconds: float = 1.5,
    rate: float = 20.0,
    windows: int = 1,
    progress: Progress = silent,
) -> list[ConcurrencyRow]:
    """Every system at every level of clients for `seconds`, searches alone and then while `rate` cells a second
    are written, in `windows` windows of time taken in turn with the other levels'."""
    to_write = math.ceil(rate * (seconds * len(levels) + WARM_S)) + len(levels) * windows + 1
    work = workload(cells, to_write, queries)
    truth = Truth(work)
    rows: list[ConcurrencyRow] = []
    with ExitStack() as processes:
        pool: ClientPool | None = None
        for spec in progress(systems, f"concurrency: {', '.join(map(str, levels))} clients, N={cells:,}"):
            with (
                tempfile.TemporaryDirectory(prefix=f"magbench-clients-{spec.replace(':', '_')}-") as workdir,
                ExitStack() as built,
            ):
                if spec in SERVERS:
                    pool = pool or processes.enter_context(ClientPool(max(levels) + 1))
                    target: Target = built.enter_context(SERVERS[spec](work, Path(workdir), pool))
                else:
                    in_process = InProcess(spec, work, Path(workdir))
                    built.callback(in_process.close)
                    target = in_process
                rows += _levels(target, work, truth, levels, seconds, rate, windows)
    return rows


Window = tuple[Load, list[Searched], list[Written]]
"""One window of time of a level: its load, what was searched and what was written."""


def _levels(
    target: Target,
    work: Workload,
    truth: Truth,
    levels: tuple[int, ...],
    seconds: float,
    rate: float,
    windows: int = 1,
) -> list[ConcurrencyRow]:
    """An untimed warm-up, then the levels searching alone, then the levels while writing, each in `windows`
    windows of `seconds / windows` taken in turn (1, 2, 4, 1, 2, 4, …), so that a burst of other load on a shared
    machine falls in one window of several levels, not in one level; the pool's cells are written in order."""
    rows, written, alias = [], 0, dict[str, str]()
    timed: dict[tuple[int, float], list[Window]] = {}
    runs = [(max(levels), rate, WARM_S)] + [
        (c, w, seconds / windows) for w in (0.0, rate) for _ in range(windows) for c in levels
    ]
    for number, (clients, writing, window_s) in enumerate(runs):
        start = time.monotonic_ns() + round(LEAD_S * 1e9)
        load = Load(clients, start, start + round(window_s * 1e9), writing, written)
        with one_core():
            searched, wrote = target.run(load)
        alias.update((w.id, work.pool[w.cell].id) for w in wrote)
        if number:  # not the warm-up
            timed.setdefault((clients, writing), []).append((load, searched, wrote))
        written += len(wrote)
    for level in timed.values():
        rows.append(_row(target, work, truth, level, alias))
    return rows


def _row(target: Target, work: Workload, truth: Truth, windows: list[Window], alias: dict[str, str]) -> ConcurrencyRow:
    """One level's figures over its windows, every answer checked: QPS the median window's (each window's, and so
    its spread, kept), latencies and recall over every window's searches; `alias` maps an id a server gave a
    written cell to the cell."""
    known = {doc.id for doc in work.data.docs} | alias.keys()
    found, kth, every, rates, wrote_cells, window_s = [], [], [], [], 0, 0.0
    for load, searched, wrote in windows:
        acknowledged = [w.acknowledged_ns for w in wrote]
        for search in searched:
            hits = check_hits(target.name, search.hits, k=K, known_ids=known)
            found.append(truth.similarities(search.query, [alias.get(h.doc_id, h.doc_id) for h in hits]))
            kth.append(truth.kth(search.query, load.first_cell + bisect.bisect_right(acknowledged, search.started_ns)))
        wall_s = (max(s.started_ns + s.latency_ns for s in searched) - load.start_ns) / 1e9
        rates.append(len(searched) / wall_s)
        every += searched
        wrote_cells += len(wrote)
        window_s += (load.stop_ns - load.start_ns) / 1e9
    stats = latency_stats([s.latency_ns for s in every])
    load = windows[0][0]
    return ConcurrencyRow(
        target.name,
        target.transport,
        len(work.docs),
        load.clients,
        writes_per_s=wrote_cells / window_s,
        searches=len(every),
        qps=float(np.median(rates)),
        p50_ms=stats.p50_ms,
        p99_ms=stats.p99_ms,
        recall_at_10=threshold_recall(found, np.asarray(kth), K),
        short=sum(len(s.hits) < K for s in every),
        window_qps=rates,
    )
