"""The residency stress run: many scopes, a budget far below their cells, and writers, id readers, searchers of
every scope, deleters and sleep passes at once; then a reopen. Shared by the fast test
(`tests/reliability/test_residency_stress.py`) and the report under `tox -e perf`
(`tests/bench/test_residency_stress.py`).

What it counts: calls, errors by kind, the longest call, spurious `NotFoundError`s (an id reader asks only for
cells no thread deletes, so any such error is spurious), acknowledged writes missing after reopen (a write counts as
acknowledged once it returned), and, after reopen, recall@10 of searches of every scope against exact search over
the cells held. Every worker makes a fixed number of calls (never a run for a time), and the run as a whole is
bounded: a worker still running after `Stress.timeout` is a livelock, reported as one."""

from __future__ import annotations

import hashlib
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from reference import CellularMemory, NotFoundError

K = 10
TIE = 1e-5


@dataclass(frozen=True)
class Stress:
    """The size of one run."""

    scopes: int = 40
    cells: int = 50
    """Cells per scope written before the workers start."""
    budget_share: float = 0.1
    """`resident_cells` as a share of the cells written."""
    dim: int = 64
    rounds: int = 40
    """Calls each worker makes."""
    writers: int = 2
    readers: int = 2
    searchers: int = 1
    deleters: int = 1
    queries: int = 100
    """Searches of every scope whose recall is measured after reopen."""
    timeout: float = 600.0
    """Seconds after which a worker still running is taken for a livelock."""


@dataclass
class Outcome:
    """What one run counted."""

    vectors: str
    calls: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    longest_call_s: float = 0.0
    longest_by_call: dict[str, float] = field(default_factory=dict)
    spurious_not_found: int = 0
    acknowledged: int = 0
    deleted: int = 0
    missing_after_reopen: int = 0
    deleted_returned: int = 0
    stuck_workers: int = 0
    recall_at_10: float = 0.0
    target_recall: float = 0.0
    estimated_recall: float | None = None
    """The memory's own estimate for a search of every scope, and the probe it chose (`calibration.py`)."""
    probe_margin: float = 0.0
    probe_reach: int = 0
    flat_share: float = 0.0
    """The share of the measured searches answered by a scan of every cell (exact)."""
    loads: int = 0
    scopes: int = 0
    cells: int = 0
    budget: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def timed(self, name: str, call: Callable[[], Any]) -> Any:
        """Run one call (of the method `name`), counting it, its time and what it raises (raised again)."""
        started = time.perf_counter()
        try:
            return call()
        except Exception as error:
            with self._lock:
                self.errors[type(error).__name__] += 1
                self.spurious_not_found += isinstance(error, NotFoundError)
            raise
        finally:
            spent = time.perf_counter() - started
            with self._lock:
                self.calls += 1
                self.longest_call_s = max(self.longest_call_s, spent)
                self.longest_by_call[name] = max(self.longest_by_call.get(name, 0.0), spent)

    def figures(self) -> dict[str, Any]:
        return {name: value for name, value in vars(self).items() if not name.startswith("_")} | {
            "errors": sum(self.errors.values()),
            "errors_by_kind": dict(self.errors),
        }


class Data:
    """Unit vectors of one kind for the cells and for the queries: `clustered` (points around random centres) or
    `hashed` (bag-of-words: the words of random Zipf-distributed texts hashed to buckets and counted)."""

    def __init__(self, kind: str, dim: int, seed: int = 11, vocabulary: int = 20_000) -> None:
        self.kind, self.dim = kind, dim
        self._rng = np.random.default_rng(seed)
        self._centres = self._rng.standard_normal((max(8, dim), dim))
        weights = np.cumsum(1.0 / np.arange(1, vocabulary + 1) ** 0.8)
        self._words = weights / weights[-1]
        """Zipf's law over the vocabulary, as a cumulative share: a uniform draw finds its word by bisection."""
        self._bucket = np.asarray(
            [int.from_bytes(hashlib.blake2b(word.to_bytes(4, "big"), digest_size=8).digest(), "big") % dim
             for word in range(vocabulary)]
        )  # fmt: skip

    def take(self, count: int) -> np.ndarray:
        if self.kind == "clustered":
            centres = self._centres[self._rng.integers(0, len(self._centres), count)]
            points = centres + self._rng.standard_normal((count, self.dim)) / np.sqrt(self.dim)
        else:
            lengths = self._rng.integers(4, 16, count)
            words = np.searchsorted(self._words, self._rng.random(int(lengths.sum())))
            points = np.zeros((count, self.dim))
            np.add.at(points, (np.repeat(np.arange(count), lengths), self._bucket[words]), 1)
        return (points / np.linalg.norm(points, axis=1, keepdims=True)).astype(np.float32)


def scope_name(scope: int) -> str:
    return f"user:{scope}"


def run(open_memory: Callable[[int | None], CellularMemory], kind: str, size: Stress) -> Outcome:
    """One stress run on the store `open_memory(budget)` opens (None: no budget, to write the scopes first)."""
    data = Data(kind, size.dim)
    total = size.scopes * size.cells
    budget = max(1, int(total * size.budget_share))
    outcome = Outcome(kind, scopes=size.scopes, budget=budget)
    held: dict[str, np.ndarray] = {}
    """Every acknowledged cell's vector, by id; deleted ones leave."""
    deleted: set[str] = set()
    with open_memory(None) as memory:
        for scope in range(size.scopes):
            vectors = data.take(size.cells)
            ids = [f"{scope}-{i}" for i in range(size.cells)]
            memory.add([f"note {i} of {scope}" for i in ids], vectors=vectors, ids=ids, scope=scope_name(scope))
            held.update(zip(ids, vectors))
    stable = sorted(held)
    """Cells no worker deletes: an id reader asks for these only."""
    guard = threading.Lock()
    with open_memory(budget) as memory:
        workers = _workers(memory, data, size, outcome, held, deleted, stable, guard)
        threads = [threading.Thread(target=work, daemon=True) for work in workers]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + size.timeout
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        outcome.stuck_workers = sum(thread.is_alive() for thread in threads)
        outcome.loads = memory._resident.loads
        if outcome.stuck_workers:
            memory._state.abandon()  # their next step raises; the store is left as a killed process leaves it
            for thread in threads:
                thread.join(size.timeout)
            return outcome
        memory.check_invariants()
    outcome.acknowledged, outcome.deleted = len(held) + len(deleted), len(deleted)
    with open_memory(budget) as reopened:
        wanted = sorted(held)
        found = {record.id for record in reopened.get_many(wanted)}
        outcome.missing_after_reopen = len(set(wanted) - found)
        outcome.deleted_returned = len(reopened.get_many(sorted(deleted)))
        outcome.cells = len(reopened)
        outcome.target_recall = float(reopened.config.target_recall or 0.0)
        before = reopened.stats()
        outcome.recall_at_10 = _recall(reopened, held, data.take(size.queries))
        after = reopened.stats()
        outcome.estimated_recall = after.estimated_recall
        outcome.probe_margin, outcome.probe_reach = after.probe_margin, after.probe_reach
        outcome.flat_share = (after.flat_searches - before.flat_searches) / size.queries
    return outcome


def _workers(
    memory: CellularMemory,
    data: Data,
    size: Stress,
    outcome: Outcome,
    held: dict[str, np.ndarray],
    deleted: set[str],
    stable: list[str],
    guard: threading.Lock,
) -> list[Callable[[], None]]:
    """The workers, each making `size.rounds` calls; a call that raises is counted and the worker goes on."""
    fresh = data.take(size.rounds * (size.writers + size.deleters) + size.rounds * size.searchers)
    spare = iter(range(len(fresh)))
    spare_lock = threading.Lock()

    def vector() -> np.ndarray:
        with spare_lock:
            return fresh[next(spare)]

    def attempt(name: str, call: Callable[[], Any]) -> Any:
        try:
            return outcome.timed(name, call)
        except Exception:  # counted by `timed`; the run goes on
            return None

    def writer(seed: int) -> Callable[[], None]:
        def work() -> None:
            rng = np.random.default_rng(seed)
            for turn in range(size.rounds):
                scope, one = int(rng.integers(size.scopes)), vector()
                cell_id = f"w{seed}-{turn}"
                call = lambda s=scope, v=one, i=cell_id: memory.add(  # noqa: E731
                    [f"written {i}"], vectors=[v], ids=[i], scope=scope_name(s)
                )
                if attempt("add", call) is not None:
                    with guard:
                        held[cell_id] = one

        return work

    def reader(seed: int) -> Callable[[], None]:
        def work() -> None:
            rng = np.random.default_rng(seed)
            for turn in range(size.rounds):
                picked = [stable[int(i)] for i in rng.integers(len(stable), size=3)]
                if turn % 3 == 0:
                    attempt("get", lambda p=picked: memory.get(p[0]))
                elif turn % 3 == 1:
                    records = attempt("get_many", lambda p=picked: memory.get_many(p))
                    if records is not None and len(records) != len(picked):
                        with outcome._lock:
                            outcome.spurious_not_found += len(picked) - len(records)
                else:
                    attempt("update", lambda p=picked, t=turn: memory.update(p[0], metadata={"turn": t}))

        return work

    def searcher() -> None:
        for _ in range(size.rounds):
            query = vector()
            attempt("search of every scope", lambda v=query: memory.search(v, k=K))

    def deleter(seed: int) -> Callable[[], None]:
        def work() -> None:
            rng = np.random.default_rng(seed)
            for turn in range(size.rounds):
                scope, one, cell_id = int(rng.integers(size.scopes)), vector(), f"d{seed}-{turn}"
                added = attempt(
                    "add", lambda s=scope, v=one, i=cell_id: memory.add([i], vectors=[v], ids=[i], scope=scope_name(s))
                )
                if added is None:
                    continue
                if attempt("delete", lambda i=cell_id: memory.delete([i])) is not None:
                    with guard:
                        deleted.add(cell_id)
                else:
                    with guard:
                        held[cell_id] = one

        return work

    def sleeper() -> None:
        rng = np.random.default_rng(99)
        for turn in range(max(1, size.rounds // 4)):
            scope = None if turn % 2 else scope_name(int(rng.integers(size.scopes)))
            attempt("consolidate", lambda s=scope: memory.consolidate(scope=s))

    return [
        *(writer(i) for i in range(size.writers)),
        *(reader(100 + i) for i in range(size.readers)),
        *(searcher for _ in range(size.searchers)),
        *(deleter(200 + i) for i in range(size.deleters)),
        sleeper,
    ]


def _recall(memory: CellularMemory, held: dict[str, np.ndarray], queries: np.ndarray) -> float:
    """Mean recall@10 of searches of every scope against exact search over the cells held (a hit counts when it
    scores at least the 10th exact score, as ann-benchmarks counts ties)."""
    ids = sorted(held)
    matrix = np.stack([held[i] for i in ids])
    row = {cell_id: i for i, cell_id in enumerate(ids)}
    exact = matrix @ queries.T
    recalls = []
    for column, query in enumerate(queries):
        bar = np.sort(exact[:, column])[-K] - TIE
        hits = memory.search(query, k=K)
        recalls.append(sum(exact[row[hit.id], column] >= bar for hit in hits if hit.id in row) / K)
    return float(np.mean(recalls))
