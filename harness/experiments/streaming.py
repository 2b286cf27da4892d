"""The streaming runbook: writes, deletes and searches interleaved over real text in its written order, and the
report's tables of every runbook that fills the streaming section (`expiring_stream`, `agent_loop`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt

from harness.data.encoding import encode_corpus
from harness.data.generated import stream_evalset
from harness.experiments.definition import DEFAULT_PLAN, Experiment, RunContext
from harness.measure.replay import run_streams
from harness.measure.runbooks import Runbook, agent_stream
from harness.measure.timing import K
from harness.output import plots
from harness.output.formats import percent, share
from harness.output.results import RunResults, StreamRow
from harness.output.sections.common import SYSTEM
from harness.output.tables import Table, column

SYSTEMS = (
    "reference",
    "reference-dense",
    "flat-numpy",
    "bm25",
    "hybrid-rrf",
    "faiss-ivf",
    "faiss-hnsw",
    "flat-chroma",
)
"""The streaming runbook (`runbooks.agent_stream`): faiss-ivf is trained on the first 10 % of the stream."""


def run(context: RunContext) -> list[StreamRow]:
    """Writes, deletes and searches interleaved over real text in its written order (a streaming runbook)."""
    passages = len(context.corpus.passages)
    whole = passages if context.data == "beam" else context.plan.stream_cells  # BEAM: every passage
    return replay_text(context, STREAMING, text_stream_cells(context, whole), agent_stream)


def text_stream_cells(context: RunContext, whole: int) -> int:
    """The cells a runbook over the real-text corpus writes: `whole`, or `--stream-size`, at most the passages the
    held-out queries leave."""
    return min(len(context.corpus.passages) - context.plan.stream_queries, context.stream_size or whole)


def replay_text(
    context: RunContext, experiment: Experiment, cells: int, runbook: Callable[[int, int], Runbook]
) -> list[StreamRow]:
    """`experiment`'s systems through `runbook(cells, queries)` over the real-text corpus in its written order."""
    plan, corpus, encoder = context.plan, context.corpus, context.text_encoder
    vectors = encode_corpus(corpus, encoder, progress=context.progress)
    data = stream_evalset(corpus, vectors, cells, queries=plan.stream_queries)
    options = {"faiss-ivf": {"train_after": max(1, cells // 10)}}  # trained on the first 10 % of the stream
    book = runbook(cells, plan.stream_queries)
    return run_streams(book, data, context.systems_of(experiment), encoder.name, context.progress, options)


SECONDS = 40.0


def work(context: RunContext) -> float:
    cells = text_stream_cells(context, context.plan.stream_cells)
    encoding = 0.0 if "realtext" in context.chosen else context.encoding_seconds()
    return context.scaled(SECONDS, STREAMING, cells, DEFAULT_PLAN.stream_cells) + encoding


QUERIED_BY = column("queried by", "query")


STREAM_RECALL = (
    "recall@10 against the exact dense neighbours of each held-out query's vector among the cells live then (a "
    f"hit tied with the {K}th neighbour counts). A system queried by text (`queried by` text or text + vector) "
    "ranks by the query's words as well, so against dense neighbours it reads lower by design: a different "
    "ranking, not lost neighbours (the engine's dense recall is `reference-dense`'s)."
)


OPERATIONS = {
    "write": "write",
    "delete": "delete",
    "search_after_write": "first search after a write",
    "search": "search",
    "find_own": "find own cell",
}
"""The timed operations a streaming table shows (p50 / p99 in ms), in order, and what it calls them."""


def headline(results: RunResults) -> list[Table]:
    rows = [r for r in results.streaming if r.runbook == "agent-stream" and not r.skipped]
    if not rows:
        return []
    columns = (
        SYSTEM,
        QUERIED_BY,
        column("recall@10 at the end", "recall_end", format=share),
        column("search p50 (ms)", "search_p50_ms"),
        column("first search after a write p50 (ms)", "search_after_write_p50_ms"),
        column("written (cells/s)", "written_per_s"),
        column("status", "status"),
    )
    return [
        Table(
            "streaming-headline",
            f"Streaming real text: {rows[0].cells:,} cells written, searched and deleted in turns",
            f"The agent-stream runbook; {STREAM_RECALL} Every operation and checkpoint is under Streaming below.",
            columns,
            [stream_fields(r) for r in rows],
            csv=False,
        )
    ]


def table(results: RunResults) -> list[Table]:
    tables = []
    for runbook in dict.fromkeys(r.runbook for r in results.streaming):
        rows = [r for r in results.streaming if r.runbook == runbook]
        fields = [stream_fields(r) for r in rows]
        kinds = [kind for kind in OPERATIONS if any(f"{kind}_p50_ms" in f for f in fields)]
        columns = [SYSTEM, QUERIED_BY, column("cells", "cells")]
        for kind in kinds:
            columns.append(column(f"{OPERATIONS[kind]} (ms, p50 / p99)", f"{kind}_p50_ms", f"{kind}_p99_ms"))
            if kind == "write":
                columns.append(column("written (cells/s)", "written_per_s"))
        if any("sleep_s" in f for f in fields):
            columns.append(column("sleep (s, all passes)", "sleep_s"))
        if any(r.checkpoints for r in rows):
            columns.append(
                column("recall@10 (min / mean / end)", "recall_min", "recall_mean", "recall_end", format=share)
            )
        if any("found_own_at_1" in f for f in fields):
            columns.append(column("own cell first", "found_own_at_1", format=percent))
        columns.append(column("status", "status"))
        recall = f" Recall: {STREAM_RECALL}" if any(r.checkpoints for r in rows) else ""
        tables.append(
            Table(
                f"streaming-{runbook}",
                f"Streaming: `{runbook}`",
                f"{rows[0].description}. Each system runs the runbook on its own, every operation timed on one core "
                "after an untimed warm-up; the first search after a write, delete or sleep is counted apart from a "
                f"search with none before it. A system that returns a deleted cell FAILS.{recall}",
                columns,
                fields,
                plot="streaming.png" if runbook == "agent-stream" else "",
            )
        )
    checkpoints = [
        {"runbook": r.runbook, "system": r.system, **asdict(c)} for r in results.streaming for c in r.checkpoints
    ]
    if checkpoints:
        tables.append(
            Table(
                "stream_checkpoints",
                "Streaming: checkpoints",
                "At each checkpoint every held-out query is answered back to back (`search p50`); `between writes "
                "p50`: the searches taken between writes since the previous checkpoint. Recall@10 as above.",
                (
                    column("runbook", "runbook"),
                    SYSTEM,
                    column("checkpoint", "label"),
                    column("written", "written"),
                    column("live", "live"),
                    column("recall@10 vs exact dense", "recall_at_10", format=share),
                    column("search p50 (ms)", "search_p50_ms"),
                    column("between writes p50 (ms)", "between_p50_ms"),
                    column("deleted returned", "deleted_returned"),
                ),
                checkpoints,
            )
        )
    return tables


def stream_fields(row: StreamRow) -> dict[str, Any]:
    """One system through one runbook: each kind of operation's p50 and p99 (ms), writes in cells/s, sleep's
    total, recall at the worst checkpoint, averaged over every checkpoint (as big-ann-benchmarks reports it) and at
    the last."""
    fields: dict[str, Any] = {"runbook": row.runbook, "system": row.system, "query": row.query, "cells": row.cells}
    if row.skipped:
        return fields | {"status": f"skipped: {row.skipped}"}
    for operation in row.operations:
        if operation.kind == "sleep":
            fields["sleep_s"] = operation.total_s
        elif operation.kind in OPERATIONS:
            stats = operation.latency
            fields |= {f"{operation.kind}_p50_ms": stats.p50_ms, f"{operation.kind}_p99_ms": stats.p99_ms}
            if operation.kind == "write":
                fields["written_per_s"] = round(operation.cells_per_s)
    if row.checkpoints:
        recalls = [c.recall_at_10 for c in row.checkpoints]
        fields |= {"recall_min": min(recalls), "recall_mean": row.mean_recall, "recall_end": recalls[-1]}
    if row.runbook == "agent-loop":
        fields["found_own_at_1"] = row.found_own_at_1
    fields["status"] = f"FAILED: returned {row.deleted_returned} deleted cells" if row.deleted_returned else "ok"
    return fields


def figures(out: Path, results: RunResults) -> list[Path]:
    """The agent stream's recall and latency at its checkpoints."""
    stream = [r for r in results.streaming if r.runbook == "agent-stream" and r.checkpoints]
    return [draw(out / "streaming.png", stream)] if stream else []


def draw(path: Path, rows: Sequence[StreamRow]) -> Path:
    """Recall along the stream for the systems queried by vector (what the ground truth is; text systems rank
    by words too), and every system's p50 search at each checkpoint."""
    figure, (recall, latency) = plt.subplots(1, 2, figsize=(12, 4.8))
    drawn = {r.system: r for r in rows if r.checkpoints}
    for system, kind in plots.styles([s for s, r in drawn.items() if r.query == "vector"]).items():
        checkpoints = drawn[system].checkpoints
        recall.plot([c.written for c in checkpoints], [c.recall_at_10 for c in checkpoints], **kind)
    for system, kind in plots.styles(list(drawn)).items():
        checkpoints = drawn[system].checkpoints
        latency.plot([c.written for c in checkpoints], [c.search_p50_ms for c in checkpoints], **kind)
    lowest = min((c.recall_at_10 for r in drawn.values() if r.query == "vector" for c in r.checkpoints), default=1.0)
    recall.set(
        xlabel="cells written", ylabel="recall@10 against exact dense search", ylim=(min(0.95, lowest - 0.01), 1.005)
    )
    recall.set_title("Recall along the stream (systems queried by vector)", fontsize=10)
    recall.grid(True, alpha=0.3)
    if recall.lines:
        recall.legend(fontsize=7, loc="lower left")
    latency.set(xlabel="cells written", ylabel="p50 search at the checkpoint (ms, one core)", yscale="log")
    latency.set_title("Latency along the stream (every system)", fontsize=10)
    return plots.save(figure, latency, path)


STREAMING = Experiment(
    "streaming",
    section="streaming",
    data=["default", "beam"],
    run=run,
    systems=SYSTEMS,
    work=work,
    headlines=(headline,),
    tables=(table,),
    figures=(figures,),
)
