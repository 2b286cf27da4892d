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
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import matplotlib.pyplot as plt
import numpy as np
from matplotlib import ticker
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from readerwriterlock import rwlock

from harness.data.encoding import encode_evalset
from harness.data.evalset import EvalSet
from harness.data.generated import notes_evalset
from harness.experiments.definition import DEFAULT_PLAN, Experiment, RunContext
from harness.measure.checking import check_hits
from harness.measure.clients import ClientPool, Connection, Load, Searched, Written, run_threads
from harness.measure.metrics import latency_stats, threshold_recall
from harness.measure.server_processes import ChromaServer, mcp_server
from harness.measure.timing import K, one_core, open_system, warm
from harness.output import plots
from harness.output.formats import figure, share
from harness.output.progress import Progress, silent
from harness.output.results import ConcurrencyRow, RunResults
from harness.output.sections.common import SYSTEM
from harness.output.tables import Table, column
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
    """One level's figures over its windows, every answer checked: QPS the median window's (each window's QPS and
    p99, and so their spread, kept), latencies and recall over every window's searches; `alias` maps an id a server
    gave a written cell to the cell."""
    known = {doc.id for doc in work.data.docs} | alias.keys()
    found, kth, every, rates, tails, wrote_cells, window_s = [], [], [], [], [], 0, 0.0
    for load, searched, wrote in windows:
        acknowledged = [w.acknowledged_ns for w in wrote]
        for search in searched:
            hits = check_hits(target.name, search.hits, k=K, known_ids=known)
            found.append(truth.similarities(search.query, [alias.get(h.doc_id, h.doc_id) for h in hits]))
            kth.append(truth.kth(search.query, load.first_cell + bisect.bisect_right(acknowledged, search.started_ns)))
        wall_s = (max(s.started_ns + s.latency_ns for s in searched) - load.start_ns) / 1e9
        rates.append(len(searched) / wall_s)
        tails.append(latency_stats([s.latency_ns for s in searched]).p99_ms)
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
        window_p99_ms=tails,
    )


SYSTEMS = (
    "reference",
    "reference-dense",
    "flat-numpy",
    "faiss-hnsw",
    "flat-chroma",
    "reference-mcp",
    "chroma-server",
)
"""Many clients at once: the engine by text (as its MCP server searches) and by vector, peers in
this process; the engine's MCP server and a Chroma server, each searched by client processes."""


def run(context: RunContext) -> list[ConcurrencyRow]:
    """QPS and p50 / p99 of 1–8 clients at once, searches alone and while writing, in process and through servers."""
    plan = context.plan
    return concurrency_rows(
        context.systems_of(CONCURRENCY),
        cells=plan.concurrency_cells,
        queries=plan.queries,
        levels=plan.concurrency_levels,
        seconds=plan.concurrency_seconds,
        rate=plan.concurrency_write_rate,
        windows=plan.concurrency_windows,
        progress=context.progress,
    )


SECONDS = 150.0
"""A default run's concurrency, on the machine the defaults were measured on (`harness.experiments.definition`)."""


def work(context: RunContext) -> float:
    plan, default = context.plan, DEFAULT_PLAN
    each, default_each = (len(p.concurrency_levels) * p.concurrency_seconds for p in (plan, default))
    return context.scaled(SECONDS, CONCURRENCY, each, default_each)


def table(results: RunResults) -> list[Table]:
    if not results.concurrency:
        return []
    plan, cpus = results.run.plan, results.run.machine.cpus
    fewest, most = min(plan.concurrency_levels), max(plan.concurrency_levels)
    return [
        Table(
            "concurrency",
            f"Concurrency: {fewest}–{most} clients at once against one system ({cpus} cores here)",
            f"This machine has {cpus} cores: past that many clients, more clients can only queue. Each level searches "
            f"for {plan.concurrency_seconds:g} s with every client at once, over {plan.concurrency_cells:,} agents' "
            f"notes (mock-encoder vectors); then the same while {plan.concurrency_write_rate:g} cells a second are "
            "written, one a write (`writing`: as achieved). QPS: every client's searches over the time from the "
            "common start to the last answer; p50 / p99 of each search, its wait for the others included. Clients of "
            "a system in process are threads, and a system that does not declare `threads` is guarded by a "
            "readers–writer lock, as a server on it would be; the engine's MCP server (`reference-mcp`, searched by "
            "text) and a Chroma server (`chroma-server`) are searched by client processes of their own. Recall@10 "
            "is against exact dense search over the cells written before each search began (`reference` and "
            f"`reference-mcp` rank text queries by words too); `short`: answers with fewer than {K} hits. Each level "
            f"searches in {plan.concurrency_windows} windows of time taken in turn with the other levels' (so a burst "
            "of other load on a shared machine falls in a window of several levels, not in one level): QPS is the "
            "median window's, `windows` its slowest and fastest window's (far apart: the machine was busy), and "
            "`p99 windows` the lowest and highest of the windows' p99; latencies and recall pool every window. Two "
            "levels or systems whose windows overlap differ by no more than this machine's noise.",
            (
                SYSTEM,
                column("clients", "clients"),
                column("clients are", "transport"),
                column("QPS", "qps"),
                column("windows", "qps_windows"),
                column("p50 / p99 (ms)", "p50_ms", "p99_ms"),
                column("p99 windows", "p99_windows"),
                column("recall@10", "recall_at_10", format=share),
                column("writing: writes/s", "writing_writes_per_s"),
                column("writing: QPS", "writing_qps"),
                column("writing: windows", "writing_qps_windows"),
                column("writing: p99 (ms)", "writing_p99_ms"),
                column("writing: p99 windows", "writing_p99_windows"),
                column("writing: recall@10", "writing_recall_at_10", format=share),
                column("short", "short"),
            ),
            _concurrency_rows(results.concurrency),
            plot="concurrency.png",
        )
    ]


def _concurrency_rows(rows: list[ConcurrencyRow]) -> list[dict[str, Any]]:
    """One line per system and level: searches alone beside searches while writing."""
    writing = {(r.system, r.clients): r for r in rows if r.writes_per_s}
    table = []
    for row in rows:
        if row.writes_per_s:
            continue
        during = writing.get((row.system, row.clients))
        fields: dict[str, Any] = {
            "system": row.system,
            "clients": row.clients,
            "transport": row.transport,
            "qps": row.qps,
            "qps_windows": _spread(row.window_qps),
            "p50_ms": row.p50_ms,
            "p99_ms": row.p99_ms,
            "p99_windows": _spread(row.window_p99_ms),
            "recall_at_10": row.recall_at_10,
            "short": row.short + (during.short if during else 0),
        }
        if during is not None:
            fields |= {
                "writing_writes_per_s": during.writes_per_s,
                "writing_qps": during.qps,
                "writing_qps_windows": _spread(during.window_qps),
                "writing_p99_ms": during.p99_ms,
                "writing_p99_windows": _spread(during.window_p99_ms),
                "writing_recall_at_10": during.recall_at_10,
            }
        table.append(fields)
    return table


def _spread(values: list[float]) -> str:
    """The lowest and the highest of a level's windows' figures ("" for a row of one window, or of none recorded)."""
    return f"{figure(min(values))}–{figure(max(values))}" if len(values) > 1 else ""


def figures(out: Path, results: RunResults) -> list[Path]:
    """QPS and p99 against clients."""
    return [draw(out / "concurrency.png", results.concurrency)] if results.concurrency else []


def draw(path: Path, rows: Sequence[ConcurrencyRow]) -> Path:
    """Small multiples, one column per system (`concurrency_figure`)."""
    figure, _ = concurrency_figure(rows)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


COLUMNS = 4
"""Systems side by side in the concurrency figure before it starts another row of them."""


def concurrency_figure(rows: Sequence[ConcurrencyRow]) -> tuple[Figure, list[tuple[Axes, Axes]]]:
    """For each system, QPS above and p99 below against clients, searches alone (solid) and while writing
    (dashed): a line through each level's median window, and a band from the level's lowest window to its
    highest, so that what the machine's noise moved reads as the band's width. Every system's panels share one
    scale per figure, so columns compare by eye. Returns the figure and each system's panels."""
    systems = list(dict.fromkeys(r.system for r in rows))
    across = min(COLUMNS, len(systems))
    down = -(-len(systems) // across)
    figure, grid = plt.subplots(2 * down, across, figsize=(3.1 * across, 5.2 * down), sharex=True, squeeze=False)
    panels = [
        (grid[2 * (n // across), n % across], grid[2 * (n // across) + 1, n % across]) for n in range(len(systems))
    ]
    for system, (qps, p99) in zip(systems, panels):
        mine = [r for r in rows if r.system == system]
        qps.set_title(f"{system}\n{mine[0].transport}", fontsize=9)
        for writing in (False, True):
            level = sorted((r for r in mine if bool(r.writes_per_s) == writing), key=lambda r: r.clients)
            if level:
                _band(qps, level, [r.qps for r in level], [r.window_qps for r in level], writing)
                tails = [float(np.median(r.window_p99_ms)) if r.window_p99_ms else r.p99_ms for r in level]
                _band(p99, level, tails, [r.window_p99_ms for r in level], writing)
    levels = sorted({r.clients for r in rows})
    for number, (qps, p99) in enumerate(panels):
        for axes in (qps, p99):
            axes.set(xscale="log", yscale="log")
            plots.log_ticks(axes)
            axes.set_xticks(levels, [str(level) for level in levels])
            axes.xaxis.set_minor_locator(ticker.NullLocator())
        if number % across == 0:
            qps.set_ylabel("searches per second (all clients)", fontsize=8)
            p99.set_ylabel("p99 search latency (ms)", fontsize=8)
        p99.set_xlabel("clients at once")
    for metric in (0, 1):
        shared = [pair[metric] for pair in panels]
        low, high = min(a.get_ylim()[0] for a in shared), max(a.get_ylim()[1] for a in shared)
        for axes in shared:
            axes.set_ylim(low, high)
    used = {id(axes) for pair in panels for axes in pair}
    for axes in grid.flat:
        axes.set_visible(id(axes) in used)
    panels[0][0].legend(fontsize=7, loc="lower right")
    figure.suptitle("Concurrency: each level's median, and a band from its lowest window to its highest", fontsize=10)
    return figure, panels


def _band(
    axes: Axes, rows: Sequence[ConcurrencyRow], middle: list[float], windows: list[list[float]], writing: bool
) -> None:
    """One line of a system's levels and the band of their windows' lowest and highest figures (a level of one
    window or none recorded: no width there)."""
    kind: dict[str, Any] = {
        "color": plots.colour(rows[0].system),
        "marker": plots.marker(rows[0].system),
        "markerfacecolor": "none",
    }
    label = f"while writing {rows[0].writes_per_s:.0f}/s" if writing else "searches alone"
    clients = [r.clients for r in rows]
    axes.plot(clients, middle, linestyle="--" if writing else "-", label=label, **kind)
    low = [min(w, default=m) for w, m in zip(windows, middle)]
    high = [max(w, default=m) for w, m in zip(windows, middle)]
    axes.fill_between(clients, low, high, color=kind["color"], alpha=0.15 if writing else 0.3, linewidth=0)


CONCURRENCY = Experiment(
    "concurrency",
    section="concurrency",
    data=["default"],
    run=run,
    systems=SYSTEMS,
    work=work,
    tables=(table,),
    figures=(figures,),
)
