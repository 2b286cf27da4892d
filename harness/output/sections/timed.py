"""The timed sections: synthetic scaling (topics fixed, topics growing), query-parameter sweeps, real text."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.measure.plan import FIXED_CLUSTERS, GROWING_CLUSTER
from harness.measure.timing import WARMUP_QUERIES, K
from harness.output.formats import growth, percent, share
from harness.output.results import Measurement, RunResults
from harness.output.sections.common import P50, RECALL, SIZE, SYSTEM
from harness.output.tables import Column, Table, column

ESTIMATED = column("estimated recall", "estimated_recall", format=share)
ESTIMATED_LOW = column("lower bound", "estimated_recall_low", format=share)
BYTES_READ = column("bytes read / search", "bytes_read_per_search")
TIMED: tuple[Column, ...] = (
    SYSTEM,
    SIZE,
    P50,
    column("p95 (ms)", "latency_p95_ms"),
    column("p99 (ms)", "latency_p99_ms"),
    column("QPS (1 core)", "latency_qps"),
    column("pass spread", "pass_spread", format=percent),
    RECALL,
    ESTIMATED,
    ESTIMATED_LOW,
    BYTES_READ,
    column("build (s)", "build_s"),
    column("ingest (cells/s)", "ingest_per_s"),
    column("RSS (bytes/cell)", "rss_bytes_per_doc", format=growth),
    column("groups", "groups"),
)
SWEPT: tuple[Column, ...] = (
    SYSTEM,
    SIZE,
    column("setting", "param"),
    P50,
    RECALL,
    ESTIMATED,
    ESTIMATED_LOW,
    BYTES_READ,
)
TIMING = (
    f"Latency: one query's wall time around `search` on one core, each setting's queries back to back after "
    f"{WARMUP_QUERIES} untimed warm-up queries, pooled over the timing passes (`pass spread`: the slowest pass's "
    "median over the fastest's, minus one); QPS = 1 / mean latency."
)
BUILD = (
    "Build: adding every cell, on every core, after an untimed warm-up build of the same system (what a process "
    "pays once, such as loading compiled code, is not any size's build); RSS per cell is the process's resident "
    "memory grown by the build, approximate (– where it did not grow: the build reused memory an earlier one "
    "freed, so the reading says nothing of the system's size)."
)
BYTES = (
    "`bytes read / search`: the vector bytes the engine's dense stage read per query (int8 codes of centroids and "
    "cells, the float32 vectors it rescored; a flat search reads every float32 vector, 4 bytes per dimension); "
    "– where a system does not count them."
)
ESTIMATE = (
    "`estimated recall`: the engine's own estimate of its recall@10 (its cells as queries, against exact search "
    "over what it holds), by which it chose its probe margin for its `target_recall`; `lower bound`: the estimate's "
    "one-sided lower bound at the engine's confidence (`stats().recall_confidence`), which the margin chosen makes "
    "meet the target."
)


def _timed_rows(measurements: Sequence[Measurement]) -> list[dict[str, Any]]:
    return [_fields(m.row(), TIMED) for m in measurements if not m.params]


def _swept_rows(measurements: Sequence[Measurement]) -> list[dict[str, Any]]:
    return [{**_fields(m.row(), SWEPT), "param": _params(m)} for m in measurements if m.params]


def _fields(row: dict[str, Any], columns: Sequence[Column]) -> dict[str, Any]:
    return {key: row.get(key, "") for c in columns for key in c.keys}


def _params(m: Measurement) -> str:
    return ", ".join(f"{k}={v}" for k, v in m.params.items())


def _largest(measurements: Sequence[Measurement]) -> list[Measurement]:
    """The default-setting measurements at the section's largest size."""
    defaults = [m for m in measurements if not m.params]
    largest = max((m.n_docs for m in defaults), default=0)
    return [m for m in defaults if m.n_docs == largest]


def _versus_exact(measurements: Sequence[Measurement]) -> list[dict[str, Any]]:
    """Each system's p50 and recall, and how many times faster than exact search (flat-numpy) on the same data, by
    the verdicts' rule (`FASTER`)."""
    exact = next((m for m in measurements if m.system == "flat-numpy"), None)
    return [
        {
            "system": m.system,
            "n_docs": m.n_docs,
            "latency_p50_ms": m.latency.p50_ms,
            "recall_at_10": m.recall_at_10,
            "estimated_recall": m.describe.get("estimated_recall", ""),
            "estimated_recall_low": m.describe.get("estimated_recall_low", ""),
            "faster_than_exact": exact.best_p50_ms / m.best_p50_ms if exact and m.best_p50_ms else "",
            "build_s": m.build_s,
        }
        for m in measurements
    ]


FASTER = (
    "`× faster than exact`: by the rule of the speed-up verdicts, flat-numpy's median of each query's fastest timing "
    "pass over the system's (load only slows a pass; the p50 column pools every pass, so its ratio may differ on a "
    "busy machine)"
)
VERSUS_EXACT = (
    SYSTEM,
    P50,
    column("× faster than exact", "faster_than_exact"),
    RECALL,
    ESTIMATED,
    ESTIMATED_LOW,
    column("build (s)", "build_s"),
)


def scaling_headline(results: RunResults) -> list[Table]:
    rows = _largest(results.scaling)
    if not rows:
        return []
    return [
        Table(
            "scaling-headline",
            f"Synthetic clusters at N = {rows[0].n_docs:,}",
            f"{FIXED_CLUSTERS} clustered topics, {rows[0].queries:,} queries, k = {K}: p50 of one query on one core; "
            f"{FASTER}; recall@10 against exact search. Every size, the sweep and the units are under Scaling below.",
            VERSUS_EXACT,
            _versus_exact(rows),
            csv=False,
        )
    ]


def scaling(results: RunResults) -> list[Table]:
    plan = results.run.plan
    rows = _timed_rows(results.scaling)
    if not rows:
        return []
    queries = results.scaling[0].queries
    return [
        Table(
            "scaling",
            "Scaling (synthetic)",
            f"{FIXED_CLUSTERS} clustered topics at every N (spread {plan.spread}), {queries:,} held-out queries, "
            f"k = {K}; recall@10 against exact search over the same vectors. {TIMING} {BUILD} {BYTES} {ESTIMATE}",
            TIMED,
            rows,
            plot="latency_vs_n.png",
        )
    ]


def growing(results: RunResults) -> list[Table]:
    rows = _timed_rows(results.growing)
    if not rows:
        return []
    return [
        Table(
            "growing",
            "Scaling when topics multiply (synthetic)",
            f"One cluster per {GROWING_CLUSTER:,} vectors, so only the number of groups grows with N; otherwise as "
            "Scaling above.",
            TIMED,
            rows,
        )
    ]


def sweep(results: RunResults) -> list[Table]:
    rows = _swept_rows(results.scaling)
    if not rows:
        return []
    return [
        Table(
            "sweep",
            "Query-parameter sweep at the largest size (synthetic)",
            f"Each row is one setting of a system's query parameter ({swept(results.scaling)}); its default "
            "setting is its row in the Scaling table. Recall@10 against exact search; p50 on one core.",
            SWEPT,
            rows,
            notes=same_at_every_setting(results.scaling),
            plot="recall_vs_latency.png",
        )
    ]


def realtext_headline(results: RunResults) -> list[Table]:
    rows = _largest(results.realtext)
    if not rows:
        return []
    return [
        Table(
            "realtext-headline",
            f"Real text at N = {rows[0].n_docs:,} passages",
            f"{rows[0].queries:,} held-out passages as queries ({rows[0].encoder}), k = {K}: p50 of one query "
            f"on one core; {FASTER}; recall@10 against exact dense search (BM25 and hybrid-rrf rank by words too: "
            "their recall shows how differently they rank). Every size and the sweep are under Real text below.",
            VERSUS_EXACT,
            _dense_estimates_only(_versus_exact(rows), rows),
            notes=_by_words_note(rows),
            csv=False,
        )
    ]


def realtext(results: RunResults) -> list[Table]:
    rows = _timed_rows(results.realtext)
    if not rows:
        return []
    return [
        Table(
            "realtext",
            "Real text",
            f"Passages of a corpus as cells, {results.realtext[0].queries:,} held-out passages as queries, "
            "recall@10 against exact dense search. Real embeddings have no tight clusters. `reference-dense` is the "
            "engine queried with the vector alone; BM25 ranks by words, so its recall against exact dense "
            f"neighbours shows how differently it ranks. {TIMING} {BUILD} {BYTES} {ESTIMATE}",
            TIMED,
            _dense_estimates_only(rows, results.realtext),
            notes=_by_words_note(results.realtext),
        )
    ]


def realtext_sweep(results: RunResults) -> list[Table]:
    rows = _swept_rows(results.realtext)
    if not rows:
        return []
    return [
        Table(
            "realtext_sweep",
            "Real text: query-parameter sweep at the largest size",
            f"Each row is one setting of a system's query parameter ({swept(results.realtext)}); recall@10 against "
            "exact dense search, p50 on one core.",
            SWEPT,
            _dense_estimates_only(rows, results.realtext),
            notes=same_at_every_setting(results.realtext) + _by_words_note(results.realtext),
            plot="realtext_recall_vs_latency.png",
        )
    ]


def _ranked_by_words(measurements: Sequence[Measurement]) -> list[str]:
    """The engines that searched real text by its words and vector together (the passages' text is every
    query's): their estimate is of their dense stage alone, a different ranking from the one measured."""
    return list(dict.fromkeys(m.system for m in measurements if m.describe.get("text_queries") is True))


def _dense_estimates_only(rows: list[dict[str, Any]], measurements: Sequence[Measurement]) -> list[dict[str, Any]]:
    """The rows with no estimate beside a measurement of another ranking (an engine that ranked by words too)."""
    words = set(_ranked_by_words(measurements))
    blank = {"estimated_recall": "", "estimated_recall_low": ""}
    return [{**row, **blank} if row["system"] in words else row for row in rows]


def _by_words_note(measurements: Sequence[Measurement]) -> list[str]:
    systems = _ranked_by_words(measurements)
    if not systems:
        return []
    names = ", ".join(f"`{s}`" for s in systems)
    return [
        f"{names}: searched by the query's text and vector together (hybrid, as an agent's query is), so its "
        "recall@10 against exact dense search shows how far words move its ranking; its estimated recall is of its "
        "dense stage alone (vector queries), another ranking, so none is shown beside it (`reference-dense` is the "
        "engine searched by the vector alone)."
    ]


def swept(measurements: Sequence[Measurement]) -> str:
    """Which parameter each system sweeps, from the measurements themselves."""
    systems_of: dict[str, list[str]] = {}
    for m in measurements:
        for name in m.params:
            mine = systems_of.setdefault(f"`{name}`", [])
            if m.system not in mine:
                mine.append(m.system)
    return "; ".join(f"{name} for {', '.join(systems)}" for name, systems in systems_of.items()) or "none swept"


def same_at_every_setting(measurements: Sequence[Measurement]) -> list[str]:
    """A note for each system whose sweep read the same recall and bytes at every setting: no setting changed
    what it searched, so its points coincide (and why, when its own estimate already met every recall target)."""
    notes = []
    for system, n in dict.fromkeys((m.system, m.n_docs) for m in measurements if m.params):
        points = [m for m in measurements if (m.system, m.n_docs) == (system, n) and m.params]
        read = {(m.recall_at_10, m.describe.get("bytes_read_per_search")) for m in points}
        if len(points) < 2 or len(read) > 1:
            continue
        [name] = points[0].params
        values = [m.params[name] for m in points]
        note = (
            f"`{system}` at N = {n:,} read the same recall@10 ({points[0].recall_at_10:.3f}) and bytes at every "
            f"`{name}` ({min(values)}–{max(values)}): no setting changed what it searched"
        )
        estimates = [m.describe.get("estimated_recall") for m in points]
        if name == "target_recall" and all(isinstance(e, float) and e >= max(values) for e in estimates):
            note += (
                f"; its estimated recall at its narrowest probe margin ({min(e for e in estimates if e):.3f}) "
                "already meets every target, so none widens the probe"
            )
        notes.append(note + ".")
    return notes
