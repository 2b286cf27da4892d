"""Real text: recall against exact dense search and latency over a corpus's passages, held-out passages as
vector queries."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.data.corpus import Corpus
from harness.data.encoding import encode_corpus
from harness.data.generated import corpus_evalset
from harness.experiments.definition import DEFAULT_PLAN, Experiment, RunContext
from harness.measure.plan import RunPlan
from harness.measure.timing import K, job, timed
from harness.output import plots
from harness.output.results import Measurement, RunResults
from harness.output.sections.timed import (
    BUILD,
    BYTES,
    ESTIMATE,
    FASTER,
    SWEPT,
    TIMED,
    TIMING,
    VERSUS_EXACT,
    largest,
    same_at_every_setting,
    swept,
    swept_rows,
    timed_rows,
    versus_exact,
)
from harness.output.tables import Table

SYSTEMS = (
    "reference-dense",
    "reference-slept",
    "flat-numpy",
    "kmeans",
    "faiss-ivf",
    "faiss-hnsw",
    "bm25",
    "hybrid-rrf",
)
"""Real text, recall against exact dense search: the engine with vector queries (its dense path), also after
one sleep pass, and BM25 and hybrid-rrf to show how far ranking by words moves from dense neighbours."""


def run(context: RunContext) -> list[Measurement]:
    """Recall against exact search and latency on real text (held-out passages as vector queries)."""
    plan, corpus, encoder = context.plan, context.corpus, context.text_encoder
    vectors = encode_corpus(corpus, encoder, progress=context.progress)
    sizes = _realtext_sizes(plan, len(corpus.passages))
    jobs = []
    for size in sizes:
        evalset = corpus_evalset(corpus, vectors, size, queries=plan.realtext_queries)
        sweep = plan.sweep and size == sizes[-1]
        jobs += [
            job(plan, system, evalset, encoder.name, sweep=sweep, section="realtext")
            for system in plan.systems_at(size, context.systems_of(REALTEXT))
        ]
    measured = timed(plan, jobs, context.progress, f"real text ({corpus.name})")
    context.dataset_info = _corpus_info(corpus, measured)
    return measured


def _corpus_info(corpus: Corpus, measured: list[Measurement]) -> dict[str, Any]:
    """What the header says of a real-text corpus: its source, its passages and how the run used them, the
    fingerprint of the passages themselves (`Corpus.fingerprint`: the standard library's documentation differs
    between Python builds), and the SHA-256 of its files (none for text generated from this interpreter)."""
    largest = max((m.n_docs for m in measured), default=0)
    held_out = max((m.queries for m in measured), default=0)
    used = f"{len(corpus.passages):,} ({largest:,} in the largest memory, {held_out} held out as queries)"
    facts = {"corpus": corpus.source, "passages": used, "fingerprint": corpus.fingerprint}
    return facts | ({"sha256": corpus.sha256} if corpus.sha256 else {})


SECONDS = 45.0


def work(context: RunContext) -> float:
    plan, passages = context.plan, len(context.corpus.passages)
    cells, default = (sum(_realtext_sizes(p, passages)) for p in (plan, DEFAULT_PLAN))
    return context.scaled(SECONDS, REALTEXT, cells, default) + context.encoding_seconds()


def _realtext_sizes(plan: RunPlan, passages: int) -> list[int]:
    """The sizes of the real-text memories, smallest first: the plan's sizes that the corpus holds, and all it
    holds beside the held-out queries."""
    room = passages - plan.realtext_queries
    return sorted({*(n for n in plan.realtext_sizes if n < room), room})


def headline(results: RunResults) -> list[Table]:
    rows = largest(results.realtext)
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
            _dense_estimates_only(versus_exact(rows), rows),
            notes=_by_words_note(rows),
            csv=False,
        )
    ]


def table(results: RunResults) -> list[Table]:
    rows = timed_rows(results.realtext)
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


def sweep_table(results: RunResults) -> list[Table]:
    rows = swept_rows(results.realtext)
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


def figures(out: Path, results: RunResults) -> list[Path]:
    """Recall against latency of the sweep at the largest size."""
    if not results.realtext:
        return []
    return [plots.recall_vs_latency(out / "realtext_recall_vs_latency.png", results.realtext, "real text")]


REALTEXT = Experiment(
    "realtext",
    section="realtext",
    data=["default", "beam"],
    run=run,
    systems=SYSTEMS,
    work=work,
    headlines=(headline,),
    tables=(table, sweep_table),
    figures=(figures,),
)
