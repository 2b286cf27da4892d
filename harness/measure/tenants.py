"""The multi-tenant runbook: many users' memories in one system, as data (`TenantRunbook`), and its run (`run_tenants`).

S scopes × C cells (an agent's notes, faker, with 384-d clustered vectors given with each write) are written in turns
of 1–5 cells, each scope's turns in order and the scopes interleaved, as users writing at once; then, in a few probed
scopes, text searches (three words of one of the scope's cells, with that cell's vector) and vector searches (a
cell's vector) are timed in the shared memory and, one after the other, against the same scope's cells in a memory
of their own (the ideal a shared memory is held to, on the same load). Each probed scope's recall@10 is measured
against exact search over that scope, and every hit is checked to be of the scope searched. Operations are timed on
one core; the process's resident memory is read before and after the writes, against the raw float32 vectors.
Systems without the "scopes" capability are skipped.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.data.evalset import EvalSet
from harness.data.generators.topics import topic_haystack
from harness.data.generators.vectors import clustered_unit_vectors
from harness.measure.checking import ContractViolation, check_hits
from harness.measure.timing import K, one_core, open_system, resident_bytes, warm
from harness.output.progress import Progress, silent
from harness.output.results import TenantRow
from harness.protocol import Document, MemorySystem, Query, SearchHit

DIM = 384
TURN_CELLS = (1, 5)
"""The fewest and the most cells one write of a scope holds (each turn's size seeded between them)."""
PROBE_WORDS = 3
"""Words of one of a scope's cells that make the scope's text query."""


@dataclass(frozen=True)
class TenantRunbook:
    """The workload: `turns` are (scope, first, end): cells first … end − 1 of that scope written in one write, in
    the order given; `probed` are the scopes searched; `passes` how many times each probe is timed."""

    scopes: int
    cells: int
    turns: tuple[tuple[int, int, int], ...]
    probed: tuple[int, ...]
    passes: int = 10

    @property
    def description(self) -> str:
        return (
            f"{self.scopes:,} scopes × {self.cells} cells written in {len(self.turns):,} interleaved turns of "
            f"{TURN_CELLS[0]}–{TURN_CELLS[1]}, "
            f"then text and vector searches in {len(self.probed)} scopes, {self.passes} passes, beside each scope "
            "alone"
        )


def tenant_runbook(scopes: int, cells: int, *, probed: int = 20, passes: int = 10, seed: int = 1) -> TenantRunbook:
    """Each scope's cells in turns of 1–5 (sizes seeded), every scope's turns in order, the scopes interleaved."""
    rng = np.random.default_rng(seed)
    turns = []
    for scope in range(scopes):
        start = 0
        while start < cells:
            stop = min(cells, start + int(rng.integers(TURN_CELLS[0], TURN_CELLS[1] + 1)))
            turns.append((scope, start, stop))
            start = stop
    order = np.lexsort((rng.random(len(turns)), np.asarray([first for _, first, _ in turns])))  # shuffled by round
    chosen = rng.choice(scopes, size=min(probed, scopes), replace=False)
    return TenantRunbook(scopes, cells, tuple(turns[i] for i in order.tolist()), tuple(sorted(chosen.tolist())), passes)


def scope_name(scope: int) -> str:
    return f"user:{scope}"


def tenant_data(book: TenantRunbook, *, seed: int = 3) -> EvalSet:
    """Every cell of the runbook as a document (cell c of scope s at s × cells + c), and each probed scope's query:
    three words of one of its cells, with that cell's vector (scope-major order of the probes)."""
    total = book.scopes * book.cells
    vectors = clustered_unit_vectors(total, DIM, clusters=max(100, book.scopes // 10), spread=1.0, seed=seed).vectors
    sentences = topic_haystack(2_000, seed=5).texts
    docs = [
        Document(str(i), f"{sentences[i % len(sentences)]} (note {i})", vectors[i], scope=scope_name(i // book.cells))
        for i in range(total)
    ]
    rng = np.random.default_rng(seed)
    queries = []
    for scope in book.probed:
        row = scope * book.cells + int(rng.integers(book.cells))
        words = docs[row].text.split()
        text = " ".join(rng.choice(words, size=min(PROBE_WORDS, len(words)), replace=False).tolist())
        queries.append(Query(f"q{scope}", text, vectors[row], scope=scope_name(scope)))
    return EvalSet(f"tenants-{book.scopes}x{book.cells}", docs, queries, {})


def run_tenants(
    book: TenantRunbook, data: EvalSet, systems: Sequence[str], encoder: str, progress: Progress = silent
) -> list[TenantRow]:
    """Every system through the runbook, each in a private directory."""
    return [run_tenant(book, data, system, encoder) for system in progress(systems, f"multi-tenant ({data.name})")]


def run_tenant(book: TenantRunbook, data: EvalSet, spec: str, encoder: str) -> TenantRow:
    """One system: the interleaved writes, then the probes timed in it and in each probed scope alone (after the
    streaming runbooks' untimed warm-up, so that what a process pays once is not timed as the first writes)."""
    warm(spec, data, encoder)
    with tempfile.TemporaryDirectory(prefix="magbench-tenants-") as workdir:
        shared = open_system(spec, data, encoder=encoder, workdir=Path(workdir) / "shared")
        row = TenantRow(system=shared.name, scopes=book.scopes, cells=book.cells, description=book.description)
        try:
            if "scopes" not in shared.capabilities:
                return row.skipped_for("cannot keep scopes apart")
            before = resident_bytes()
            writes = _write(shared, book, data)
            grown = (resident_bytes() - before) / sum(d.vector.nbytes for d in data.docs if d.vector is not None)
            alone = {
                scope: _alone(spec, data, encoder, Path(workdir) / f"alone-{scope}", book, scope)
                for scope in book.probed
            }
            try:
                timed = _probe(book, data, shared, alone)
            finally:
                for system in alone.values():
                    system.close()
            return row.measured(writes, timed, _recall(book, data, shared), grown)
        finally:
            shared.close()


def _write(system: MemorySystem, book: TenantRunbook, data: EvalSet) -> list[int]:
    """The runbook's turns, each write timed on one core."""
    latencies = []
    with one_core():
        for scope, first, end in book.turns:
            docs = data.docs[scope * book.cells + first : scope * book.cells + end]
            started = time.perf_counter_ns()
            system.add(docs)
            latencies.append(time.perf_counter_ns() - started)
    return latencies


def _alone(spec: str, data: EvalSet, encoder: str, workdir: Path, book: TenantRunbook, scope: int) -> MemorySystem:
    system = open_system(spec, data, encoder=encoder, workdir=workdir)
    system.add(data.docs[scope * book.cells : (scope + 1) * book.cells])
    return system


def _probe(
    book: TenantRunbook, data: EvalSet, shared: MemorySystem, alone: dict[int, MemorySystem]
) -> dict[str, list[int]]:
    """Each probed scope's text and vector query, in the shared system then alone, `passes` times, on one core;
    every answer checked (at most k, known ids, sorted) and of the scope searched."""
    known = {d.id for d in data.docs}
    times: dict[str, list[int]] = {
        f"{kind}_{where}": [] for kind in ("text", "vector") for where in ("shared", "alone")
    }
    with one_core():
        for _ in range(book.passes):
            for scope, query in zip(book.probed, data.queries):
                vector_query = Query(query.id, "", query.vector, scope=query.scope)
                for kind, asked in (("text", query), ("vector", vector_query)):
                    for where, system in (("shared", shared), ("alone", alone[scope])):
                        started = time.perf_counter_ns()
                        hits = system.search(asked, k=K)
                        took = time.perf_counter_ns() - started
                        _check_scope(system.name, check_hits(system.name, hits, k=K, known_ids=known), book, scope)
                        times[f"{kind}_{where}"].append(took)
    return times


def _check_scope(system: str, hits: list[SearchHit], book: TenantRunbook, scope: int) -> None:
    first = scope * book.cells
    outside = [h.doc_id for h in hits if not first <= int(h.doc_id) < first + book.cells]
    if outside:
        searched = scope_name(scope)
        raise ContractViolation(f"{system} returned cells of another scope in a search of {searched}: {outside}")


def _recall(book: TenantRunbook, data: EvalSet, shared: MemorySystem) -> float:
    """Mean recall@10 of each probed scope's vector queries (every one of its cells' vectors in turn, up to 20)
    against exact search over the scope (a hit tied with the 10th neighbour counts)."""
    found = []
    for scope in book.probed:
        first = scope * book.cells
        vectors = np.stack([d.vector for d in data.docs[first : first + book.cells] if d.vector is not None])
        for row in range(min(20, book.cells)):
            scores = vectors @ vectors[row]
            kth = np.sort(scores)[-min(K, len(scores))]
            hits = shared.search(Query(f"r{scope}-{row}", "", vectors[row], scope=scope_name(scope)), k=K)
            found.append(sum(float(vectors[int(h.doc_id) - first] @ vectors[row]) >= kth - 1e-5 for h in hits))
    return float(np.mean(found)) / K
