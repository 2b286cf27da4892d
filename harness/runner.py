"""Build a system once, time its queries, check and score its answers.

Build and warm-up are kept out of query timing; every answer goes through `check_hits`.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .checking import check_documents, check_hits
from .evalset import EvalSet
from .metrics import LatencyStats, capped_recall_at_k, hits_at_k, latency_stats, mrr, ndcg_at_k, recall_at_k
from .protocol import MemorySystem, SystemContext, TunableSystem
from .registry import check_declaration, resolve

WARMUP_QUERIES = 10


@dataclass
class Measurement:
    """One system, one evaluation set, one query-parameter setting."""

    system: str
    dataset: str
    encoder: str
    n_docs: int
    params: dict[str, Any]
    build_s: float
    ingest_per_s: float
    rss_bytes_per_doc: float
    latency: LatencyStats
    recall_at_10: float
    capped_recall_at_10: float
    mrr: float
    ndcg_at_10: float
    found_at: dict[int, int]
    queries: int
    describe: dict[str, Any] = field(default_factory=dict)
    latencies_ns: list[int] = field(default_factory=list, repr=False)
    retrieved: list[list[str]] = field(default_factory=list, repr=False)

    def row(self) -> dict[str, Any]:
        """A flat dict for tables and CSV (no raw lists)."""
        flat = {
            k: v
            for k, v in asdict(self).items()
            if k not in ("latencies_ns", "retrieved", "latency", "describe", "found_at", "params")
        }
        flat.update({f"latency_{k}": v for k, v in asdict(self.latency).items()})
        flat.update({f"found_at_{k}": v for k, v in self.found_at.items()})
        flat.update({f"param_{k}": v for k, v in self.params.items()})
        flat.update({k: v for k, v in self.describe.items() if k in ("groups", "groups_per_cell")})
        return flat


def open_system(
    spec: str, evalset: EvalSet, *, encoder: str, workdir: Path, options: Mapping[str, Any] | None = None
) -> MemorySystem:
    first_vector = evalset.docs[0].vector
    context = SystemContext(dim=None if first_vector is None else len(first_vector), workdir=workdir, encoder=encoder)
    system = resolve(spec)(context, **(options or {}))
    check_declaration(system)
    if "vectors" in system.capabilities and first_vector is None:
        raise ValueError(f"{spec} takes vectors but the evaluation set has none; encode it first")
    return system


def measure(
    spec: str,
    evalset: EvalSet,
    *,
    encoder: str,
    k: int = 10,
    sweep: bool = False,
    options: Mapping[str, Any] | None = None,
    found_ks: Sequence[int] = (1, 3, 10),
) -> list[Measurement]:
    """Build `spec` on the set, query it at its defaults (params {}) and, with `sweep`, at every setting."""
    check_documents(evalset.docs)
    with tempfile.TemporaryDirectory(prefix=f"magbench-{spec.replace(':', '_')}-") as workdir:
        system = open_system(spec, evalset, encoder=encoder, workdir=Path(workdir), options=options)
        try:
            rss_before = _rss_bytes()
            started = time.perf_counter()
            system.add(evalset.docs)
            build_s = time.perf_counter() - started
            grown = _rss_bytes() - rss_before  # the allocator may hand memory back: a drop is no reading
            rss_per_doc = grown / len(evalset.docs) if grown >= 0 else float("nan")
            measurements = []
            for params in [{}, *(_settings(system) if sweep else [])]:
                if params:
                    system.set_query_params(**params)
                retrieved, latencies = _run_queries(system, evalset, k)
                measurements.append(
                    _score(system, evalset, encoder, params, build_s, rss_per_doc, retrieved, latencies, found_ks)
                )
            return measurements
        finally:
            system.close()


def group_labels(spec: str, evalset: EvalSet, *, encoder: str, options: Mapping[str, Any] | None = None) -> list[int]:
    """Each document's group, from a system that declares the "groups" capability."""
    with tempfile.TemporaryDirectory(prefix="magbench-groups-") as workdir:
        system = open_system(spec, evalset, encoder=encoder, workdir=Path(workdir), options=options)
        try:
            if "groups" not in system.capabilities:
                raise ValueError(f"{spec} does not declare the 'groups' capability")
            system.add(evalset.docs)
            return list(system.group_labels([d.id for d in evalset.docs]))
        finally:
            system.close()


def _settings(system: TunableSystem) -> list[dict[str, Any]]:
    """One dict per value of the system's query parameter (none for a system that is not tunable)."""
    if "tunable" not in system.capabilities:
        return []
    (name, values), *others = system.query_params.items()
    if others:
        raise ValueError(f"{system.name}: sweeps take one query parameter")
    return [{name: value} for value in values]


def _run_queries(system: MemorySystem, evalset: EvalSet, k: int) -> tuple[list[list[str]], list[int]]:
    known = {d.id for d in evalset.docs}
    for query in evalset.queries[:WARMUP_QUERIES]:
        system.search(query, k=k)
    retrieved, latencies = [], []
    for query in evalset.queries:
        started = time.perf_counter_ns()
        hits = system.search(query, k=k)
        latencies.append(time.perf_counter_ns() - started)
        retrieved.append([h.doc_id for h in check_hits(system.name, hits, k=k, known_ids=known)])
    return retrieved, latencies


def _score(
    system: MemorySystem,
    evalset: EvalSet,
    encoder: str,
    params: dict[str, Any],
    build_s: float,
    rss_per_doc: float,
    retrieved: list[list[str]],
    latencies: list[int],
    found_ks: Sequence[int],
) -> Measurement:
    relevant = evalset.relevant()
    describe = system.describe() if "groups" in system.capabilities else {}
    return Measurement(
        system=system.name,
        dataset=evalset.name,
        encoder=encoder,
        n_docs=len(evalset.docs),
        params=dict(params),
        build_s=build_s,
        ingest_per_s=len(evalset.docs) / build_s if build_s > 0 else float("inf"),
        rss_bytes_per_doc=rss_per_doc,
        latency=latency_stats(latencies),
        recall_at_10=recall_at_k(retrieved, relevant, 10),
        capped_recall_at_10=capped_recall_at_k(retrieved, relevant, 10),
        mrr=mrr(retrieved, relevant),
        ndcg_at_10=ndcg_at_k(retrieved, [evalset.qrels.get(q.id, {}) for q in evalset.queries], 10),
        found_at={k: hits_at_k(retrieved, relevant, k) for k in found_ks},
        queries=len(evalset.queries),
        describe=describe,
        latencies_ns=latencies,
        retrieved=retrieved,
    )


def _rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
