"""Run streaming runbooks (`runbooks.py`): every system through every step, its operations timed.

Each system runs the whole runbook on its own, its operations back to back (nothing of another system
or of the ground truth runs in between: an exact scan between two searches would flush the caches).
The ground truth is computed first: at each checkpoint, every held-out query's exact 10th best similarity
over the cells live then; recall counts the hits that score at least that (ann-benchmarks' rule: a hit
tied with the 10th neighbour counts). Operations are timed on one core, as the other sections time queries (a bulk
untimed `Write` keeps every core). Every answer is checked (`checking.check_hits`); a hit naming a deleted cell is
counted, and any such hit fails the system's row. A replace writes the new versions with `upsert` where a system
has it, else as a delete and an add (timed together, as big-ann-benchmarks' systems replace). A system that cannot
delete skips a runbook that deletes or replaces, with the reason. Before its first runbook in a process, each
system runs a short untimed warm-up on a throwaway instance (`timing.warm`), so that what a process pays once is
not timed as the first system's first steps.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np

from harness.data.evalset import EvalSet
from harness.data.generators.vectors import exact_top_k
from harness.measure.checking import check_documents, check_hits
from harness.measure.metrics import threshold_recall
from harness.measure.runbooks import Checkpoint, FindOwn, Forget, Replace, Runbook, Search, Sleep, Step, Write
from harness.measure.timing import K, one_core, open_system, warm
from harness.output.progress import Progress, silent
from harness.output.results import Operation, StreamCheckpoint, StreamRow
from harness.protocol import DeletingSystem, Document, MemorySystem, Query, SearchHit, UpdatingSystem, vector_of


def ground_truth(runbook: Runbook, data: EvalSet) -> dict[str, np.ndarray]:
    """Each checkpoint's exact k-th best similarity per held-out query, over the cells live then."""
    vectors, queries = _matrix(data.docs), _matrix(data.queries)
    truth = {}
    for label, live in runbook.live_at_checkpoints().items():
        rows = exact_top_k(vectors[live], queries, min(K, len(live)))
        truth[label] = np.einsum("ij,ij->i", vectors[live][rows[:, -1]], queries)
    return truth


def _matrix(items: Sequence[Document | Query]) -> np.ndarray:
    return np.stack([vector_of(item) for item in items]).astype(np.float32)


def run_streams(
    runbook: Runbook,
    data: EvalSet,
    systems: Sequence[str],
    encoder: str,
    progress: Progress = silent,
    options: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[StreamRow]:
    """Every system through the runbook; `data.docs` is the stream in order, `data.queries` held out."""
    if len(data.docs) < runbook.cells or len(data.queries) < runbook.queries:
        raise ValueError(f"{runbook.name} needs {runbook.cells:,} cells and {runbook.queries} queries")
    check_documents(data.docs)
    truth = ground_truth(runbook, data)
    return [
        run_stream(runbook, data, system, encoder, truth, (options or {}).get(system, {}))
        for system in progress(systems, f"{runbook.name} ({data.name})")
    ]


def run_stream(
    runbook: Runbook,
    data: EvalSet,
    spec: str,
    encoder: str,
    truth: Mapping[str, np.ndarray],
    options: Mapping[str, Any],
) -> StreamRow:
    """One system through the runbook, in a private directory."""
    return replay(runbook, data, spec, encoder, truth, options)[0]


def replay(
    runbook: Runbook,
    data: EvalSet,
    spec: str,
    encoder: str,
    truth: Mapping[str, np.ndarray] | None = None,
    options: Mapping[str, Any] | None = None,
) -> tuple[StreamRow, list[tuple[int, list[str]]]]:
    """One system through the runbook, and what each `Search` step retrieved: (query index, ids), in
    step order (a runbook without checkpoints needs no ground truth)."""
    row: dict[str, Any] = {
        "runbook": runbook.name,
        "dataset": data.name,
        "encoder": encoder,
        "cells": runbook.cells,
        "description": runbook.description,
    }
    with tempfile.TemporaryDirectory(prefix=f"magbench-stream-{spec.replace(':', '_')}-") as workdir:
        system = open_system(spec, data, encoder=encoder, workdir=Path(workdir), options=options)
        row["query"] = query_kind(system)
        try:
            if any(isinstance(s, Forget | Replace) for s in runbook.steps) and "delete" not in system.capabilities:
                return StreamRow(system=system.name, queries=runbook.queries, skipped="cannot delete", **row), []
            warm(spec, data, encoder, options)
            walk = _Walk(system, data, truth or {})
            return walk.through(runbook, row), walk.answers
        finally:
            system.close()


def query_kind(system: MemorySystem) -> str:
    """What a system searches by when a query carries both a text and a vector (its declared capabilities)."""
    uses = (("text", "text"), ("vector", "vectors"))
    return " + ".join(kind for kind, capability in uses if capability in system.capabilities)


class _Walk:
    """One system's pass through a runbook: the live set, the timings, the checks."""

    def __init__(self, system: MemorySystem, data: EvalSet, truth: Mapping[str, np.ndarray]) -> None:
        self.system, self.data, self.truth = system, data, truth
        self.vector_of = {d.id: vector_of(d) for d in data.docs}
        self.latencies: dict[str, list[int]] = defaultdict(list)
        self.cells: dict[str, int] = defaultdict(int)
        self.written: set[str] = set()
        self.deleted: set[str] = set()
        self.deleted_returned = 0
        self.changed = False
        self.found_own: list[bool] = []
        self.answers: list[tuple[int, list[str]]] = []
        self.between: list[int] = []
        self.checkpoints: list[StreamCheckpoint] = []

    def through(self, runbook: Runbook, row: dict[str, Any]) -> StreamRow:
        for step in runbook.steps:
            if isinstance(step, Write) and not step.timed:
                self._add(step.cells, timed=False)
            else:
                with one_core():
                    self._step(step)
        return StreamRow(
            system=self.system.name,
            queries=runbook.queries,
            operations=[Operation(kind, times, self.cells[kind]) for kind, times in self.latencies.items()],
            checkpoints=self.checkpoints,
            deleted_returned=self.deleted_returned,
            found_own_at_1=float(np.mean(self.found_own)) if self.found_own else float("nan"),
            **row,
        )

    def _step(self, step: Step) -> None:
        if isinstance(step, Write):
            self._add(step.cells, timed=True)
        elif isinstance(step, Search):
            hits = self._search(self.data.queries[step.query])
            self.answers.append((step.query, [h.doc_id for h in hits]))
        elif isinstance(step, FindOwn):
            doc = self.data.docs[step.cell]
            hits = self._search(Query(f"own-{doc.id}", doc.text, doc.vector), kind="find_own")
            self.found_own.append(bool(hits) and hits[0].doc_id == doc.id)
        elif isinstance(step, Forget):
            ids = [self.data.docs[cell].id for cell in step.cells]
            self._timed("delete", lambda: cast(DeletingSystem, self.system).delete(ids), cells=len(ids))
            self.deleted.update(ids)
            self.changed = True
        elif isinstance(step, Replace):
            docs = [
                dataclasses.replace(self.data.docs[source], id=self.data.docs[cell].id)
                for cell, source in zip(step.cells, step.sources)
            ]
            self._timed("replace", lambda: self._replace(docs), cells=len(docs))
            self.vector_of.update((doc.id, vector_of(doc)) for doc in docs)
            self.changed = True
        elif isinstance(step, Sleep) and "consolidate" in self.system.capabilities:
            self._timed("sleep", self.system.consolidate)  # type: ignore[attr-defined]
            self.changed = True
        elif isinstance(step, Checkpoint):
            self._checkpoint(step.label)

    def _add(self, cells: range, *, timed: bool) -> None:
        """A write (timed on one core by the caller) or the bulk load (every core)."""
        docs = self.data.docs[cells.start : cells.stop]
        self._timed("write" if timed else "load", lambda: self.system.add(docs), cells=len(docs))
        self.written.update(d.id for d in docs)
        self.changed = True

    def _replace(self, docs: list[Document]) -> None:
        """New versions under the same ids: an upsert, or a delete and an add."""
        if "update" in self.system.capabilities:
            cast(UpdatingSystem, self.system).upsert(docs)
        else:
            cast(DeletingSystem, self.system).delete([doc.id for doc in docs])
            self.system.add(docs)

    def _search(self, query: Query, *, kind: str = "") -> list[SearchHit]:
        """One timed search: `kind`, or the first search after a change (`search_after_write`) or not."""
        kind = kind or ("search_after_write" if self.changed else "search")
        hits = self._timed(kind, lambda: self.system.search(query, k=K))
        self.between.append(self.latencies[kind][-1])
        self.changed = False
        return self._checked(hits)

    def _checkpoint(self, label: str) -> None:
        retrieved, latencies = [], []
        for query in self.data.queries[: len(self.truth[label])]:
            started = time.perf_counter_ns()
            hits = self.system.search(query, k=K)
            latencies.append(time.perf_counter_ns() - started)
            retrieved.append([h.doc_id for h in self._checked(hits)])
        self.latencies["checkpoint"] += latencies
        similarities = [
            np.asarray([self.vector_of[d] @ vector_of(q) for d in found if d not in self.deleted], dtype=np.float32)
            for q, found in zip(self.data.queries, retrieved)
        ]
        live = len(self.written - self.deleted)
        self.checkpoints.append(
            StreamCheckpoint(
                label,
                written=len(self.written),
                live=live,
                recall_at_10=threshold_recall(similarities, self.truth[label], min(K, live)),
                search_p50_ms=float(np.median(latencies)) / 1e6,
                between_p50_ms=float(np.median(self.between)) / 1e6 if self.between else float("nan"),
                deleted_returned=sum(h in self.deleted for found in retrieved for h in found),
            )
        )
        self.between = []
        self.changed = False

    def _checked(self, hits: list[SearchHit]) -> list[SearchHit]:
        hits = check_hits(self.system.name, hits, k=K, known_ids=self.written)
        self.deleted_returned += sum(h.doc_id in self.deleted for h in hits)
        return hits

    def _timed(self, kind: str, call: Any, *, cells: int = 0) -> Any:
        started = time.perf_counter_ns()
        result = call()
        self.latencies[kind].append(time.perf_counter_ns() - started)
        self.cells[kind] += cells
        return result
