"""Write a run's report: `report.md` (tabulate), `results.json` (everything, raw latencies
included), CSV tables and PNG plots. Every figure in them comes from the run's measurements."""

from __future__ import annotations

import csv
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib import ticker
from tabulate import tabulate

from .claims import EDGE, MEANING, decides_a_verdict
from .confidence import INCONCLUSIVE, MARGIN, REFUTED, SUPPORTED
from .registry import SYSTEMS
from .results import DialogueRow, Measurement, RunResults, StreamRow, Verdict

SCALING_COLUMNS = [
    "system",
    "n_docs",
    "latency_p50_ms",
    "latency_p95_ms",
    "latency_p99_ms",
    "latency_qps",
    "pass_spread",
    "recall_at_10",
    "estimated_recall",
    "bytes_read_per_search",
    "build_s",
    "ingest_per_s",
    "rss_bytes_per_doc",
    "groups",
]
SWEEP_COLUMNS = [
    "system", "n_docs", "param", "latency_p50_ms", "recall_at_10", "estimated_recall", "bytes_read_per_search"
]  # fmt: skip
BEIR_COLUMNS = [
    "system",
    "dataset",
    "encoder",
    "n_docs",
    "recall_at_10",
    "capped_recall_at_10",
    "mrr",
    "ndcg_at_10",
    "latency_p50_ms",
    "latency_p95_ms",
]


def write_report(out: Path, results: RunResults) -> Path:
    """Everything of one run into `out/`; returns the path of report.md."""
    out.mkdir(parents=True, exist_ok=True)
    scaling, realtext = results.scaling, results.realtext
    scaling_rows = [_pick(m.row(), SCALING_COLUMNS) for m in scaling if not m.params]
    sweep_rows = [{**_pick(m.row(), SWEEP_COLUMNS), "param": _params(m)} for m in scaling if m.params]
    tables = {
        "scaling": scaling_rows,
        "sweep": sweep_rows,
        "growing": [_pick(m.row(), SCALING_COLUMNS) for m in results.growing],
        "needles": _needle_rows(results.needles),
        "grouping": [g.row() for g in results.grouping],
        "beir": [_pick(m.row(), BEIR_COLUMNS) for m in results.beir],
        "realtext": [_pick(m.row(), SCALING_COLUMNS) for m in realtext if not m.params],
        "realtext_sweep": [{**_pick(m.row(), SWEEP_COLUMNS), "param": _params(m)} for m in realtext if m.params],
        "dialogue": [_dialogue_row(r) for r in results.dialogue],
        "streaming": [_stream_row(r) for r in results.streaming],
        "stream_checkpoints": [
            {"runbook": r.runbook, "system": r.system, **asdict(c)} for r in results.streaming for c in r.checkpoints
        ],
        "judges": [asdict(j) for j in results.judges],
        "serving": [asdict(row) for row in results.serving],
        "tenants": [row.row() for row in results.tenants],
        "claims": [asdict(v) for v in results.claims],
        "targets": [asdict(v) for v in results.targets],
    }
    for name, rows in tables.items():
        if rows:
            _write_csv(out / f"{name}.csv", rows)
    plots = []
    if scaling_rows:
        plots.append(_plot_latency(out / "latency_vs_n.png", scaling))
    if sweep_rows:
        plots.append(_plot_pareto(out / "recall_vs_latency.png", scaling, "clustered vectors (synthetic)"))
    if realtext:
        plots.append(_plot_pareto(out / "realtext_recall_vs_latency.png", realtext, "real text"))
    if any(r.runbook == "agent-stream" and r.checkpoints for r in results.streaming):
        plots.append(_plot_stream(out / "streaming.png", [r for r in results.streaming if r.runbook == "agent-stream"]))
    (out / "results.json").write_text(results.to_json(), encoding="utf-8")
    report = out / "report.md"
    report.write_text(_markdown(results, tables, plots), encoding="utf-8")
    return report


def summary_table(results: RunResults) -> str:
    """The end-of-run summary printed to the terminal."""
    rows = [[v.claim, v.system, v.shown, v.measured] for v in [*results.claims, *results.targets]]
    return str(
        tabulate(rows, headers=["claim / target", "system", "verdict", "measured"], maxcolwidths=[None, None, None, 80])
    )


def _markdown(results: RunResults, tables: dict[str, list[dict[str, Any]]], plots: list[Path]) -> str:
    run, claims, targets = results.run, results.claims, results.targets
    machine = run.machine
    lines = [
        f"# MagneticBench run {run.id}",
        "",
        f"Commit `{run.commit}`{' (uncommitted changes)' if run.dirty else ''} · {machine.cpus} CPUs · "
        f"Python {machine.python} · {machine.platform} · took {run.duration_s:.0f} s · command `{run.command}`",
        "",
        *[f"- {key}: `{value}`" for key, value in run.dataset_info.items()],
        *_timing_lines(results),
        "",
        "## Reading",
        "",
        *_reading(claims, targets),
        "",
    ]
    if claims:
        lines += [
            "## Published claims",
            "",
            "Claims that the public cellular-memory prototype makes, checked against this run. A claim can hold for "
            "one system and not another; for `flat-linear` a NOT SUPPORTED verdict on the engine is the hoped-for "
            "result (its latency does not grow linearly).",
            "",
            *_claim_list(claims),
            "",
            _table([_verdict_row(v) for v in claims]),
            "",
        ]
    if targets:
        lines += [
            "## Targets for the reference engine",
            "",
            "What MagneticBench expects of its own engine, checked against this run.",
            "",
            *_claim_list(targets),
            "",
            _table([_verdict_row(v) for v in targets]),
            "",
        ]
        lines += [f"- **{verdict}**: {meaning}" for verdict, meaning in MEANING.items()]
        lines += [f"- **(at the edge of …)**: {EDGE}", ""]
    sections = [
        (
            "scaling",
            f"Scaling (synthetic): 100 clustered topics at every N, spread {run.plan.spread}, k = 10, "
            "recall against exact search",
            "Latency is single-query wall time measured around `search` (each setting's queries back to back, "
            "3 warm-up queries before them), pooled over the "
            "timing passes (`pass_spread`: slowest over fastest pass median, minus one); build time and memory "
            "(RSS growth per document, approximate; nan when RSS shrank) are measured separately.",
        ),
        (
            "growing",
            "Scaling when topics multiply (synthetic): one cluster per 1,000 vectors",
            "The same measurement with cluster size held constant, so only the number of groups grows with N.",
        ),
        (
            "sweep",
            "Query-parameter sweep at the largest size",
            "Each point is one setting of the system's query parameter ("
            + _swept(results.scaling)
            + "); the system's default setting is its row in the scaling table.",
        ),
        ("needles", "Needles: 200 documents, 5 needles each, per encoder", ""),
        (
            "grouping",
            "Grouping against true topics (topic haystack)",
            "k-means is given the true number of topics; the reference engine finds its groups online with no k "
            "(`reference-slept`: after one sleep pass). Its groups are sized for search (about 0.5·√N cells), "
            "so a topic spans several groups: homogeneity near 1 with low completeness means pure but fragmented "
            "groups, which ARI penalises. `reference-concepts` scores the layer above the groups after the same "
            "sleep: groups gathered by Ward linkage of their centroids, cut at the largest gap (no k given).",
        ),
        (
            "judges",
            "Conflict judges on labelled faker pairs (contradicting, consistent, unrelated)",
            "A pair is flagged when the judge names it; `missed` and `false_alarms` count pairs by kind.",
        ),
        (
            "beir",
            "BEIR-format dataset",
            "Recall@10 divides by the number of relevant documents (BEIR, MTEB); "
            "capped recall divides by min(10, relevant).",
        ),
        (
            "realtext",
            "Real text: passages of a corpus, held-out passages as vector queries, recall against exact search",
            "Real embeddings have no tight clusters. `reference-dense` is the engine queried with the vector "
            "alone; BM25 ranks by words, so its recall against exact dense neighbours shows how differently it ranks. "
            "`estimated_recall` is the engine's own estimate of its recall@10 (its cells as queries, against exact "
            "search over what it holds), by which it chose its probe margin for `target_recall`; "
            "`bytes_read_per_search` the vector bytes its dense stage read per query (int8 codes of centroids and "
            "cells, the float32 vectors it rescored; a flat search reads every float32 vector: 1,536 bytes each at "
            "384-d).",
        ),
        (
            "realtext_sweep",
            "Real text: query-parameter sweep at the largest size",
            f"Each point is one setting of the system's query parameter ({_swept(results.realtext)}).",
        ),
        (
            "streaming",
            "Streaming: the agent's loop and a stream of writes, searches, deletes and sleeps",
            "Each system runs each runbook on its own, every operation timed on one core: a write is one turn "
            "(`agent-stream`: 1–50 cells; `agent-loop`: one cell); `after write` is the first search after a "
            "write, delete or sleep, `search` one with no write before it; `find own` searches a cell just "
            "written by its own text (`found own@1`: it came first). Recall is measured at checkpoints against "
            "exact dense search over the cells live then; a system that returns a deleted cell FAILS its row. "
            "Runbooks: " + "; ".join(f"`{name}`: {text}" for name, text in _runbooks(results).items()),
        ),
        (
            "stream_checkpoints",
            "Streaming: checkpoints",
            "`search_p50_ms`: every held-out query back to back at the checkpoint; `between_p50_ms`: the searches "
            "taken between writes since the previous checkpoint.",
        ),
        (
            "dialogue",
            "Dialogue memory: one memory per conversation, evidence retrieval at k = 10",
            "recall = share of a question's evidence found; recall_any = hit@10 (some evidence found); recall_all "
            "= all of it. Session level ranks sessions by their best turn. Questions with no answer in the memory "
            "(adversarial, abstention) are reported apart; `all questions` includes them as published figures do. "
            "`memory`: `bulk` loads every turn before the questions (the published setup); `online: when due` "
            "writes the conversation turn by turn and asks each question as soon as its last evidence turn is "
            "written (questions due while at most k turns are written are left out: any system finds them all); "
            "`online: at the end` asks every question of that memory after its last turn. An online row's p50 is "
            "that of the searches taken between writes.",
        ),
        (
            "tenants",
            "Many users in one memory (multi-tenant runbook)",
            "Scopes written in interleaved turns of 1–5 cells (clustered 384-d vectors given with each write, faker "
            "notes), then, in each probed scope, a text query (three words of one of its cells, with that cell's "
            "vector) and a vector query, timed on one core in the shared memory and, one after the other, against "
            "the same scope's cells in a memory of their own: `*_shared_over_alone` is the ratio of the medians. "
            "Recall@10 is each probed scope's own vectors as queries against exact search over that scope; every "
            "hit is checked to be of the scope searched. Resident memory: the process's growth over the writes, "
            "against the raw float32 vectors. " + "; ".join(row.description for row in results.tenants[:1]),
        ),
        (
            "serving",
            "Serving: many clients at once, the engine in process and through its MCP server",
            "Each client makes a seeded mix of agents' memory calls in a scope of its own (mostly writes and "
            "searches; gets, updates, deletes and listings), all clients at once: in process each on its own "
            "thread, through the server each a real `mcp` client over streamable HTTP to `magbench serve --http` "
            "(both on an embedded store, the mock encoder). Every answer is checked as it comes (no hit from another "
            "scope, every memory read back as written, nothing lost); `calls_per_s` counts every tool's calls "
            "together. A call's latency includes its wait for the others: these are a service's latencies, not "
            "one core's.",
        ),
    ]
    for key, title, note in sections:
        if tables[key]:
            lines += [f"## {title}", "", *([note, ""] if note else []), _table(tables[key]), ""]
    for plot in plots:
        lines += [f"![{plot.stem}]({plot.name})", ""]
    lines += ["Raw per-query latencies, parameters and machine details: `results.json`; tables: `*.csv`.", ""]
    return "\n".join(lines)


def _timing_lines(results: RunResults) -> list[str]:
    """How latency was timed, how much the machine moved between passes, and anything slowed on purpose."""
    passes = {
        section: (min(counts), max(counts))
        for section in results.TIMED_SECTIONS
        if (counts := [len(m.pass_latencies_ns) for m in getattr(results, section)])
    }
    spreads = np.asarray([m.pass_spread for m in results.measurements().values() if len(m.pass_latencies_ns) > 1])
    lines = []
    plan = results.run.plan
    if passes:
        more = (
            f"; more, up to {plan.max_passes}, while the medians are unsettled" if plan.max_passes > plan.passes else ""
        )
        lines.append(
            "- timing passes (each setting's queries back to back, the settings in a rotating order, "
            f"on one core{more}): "
            + ", ".join(
                f"{section} {low}" + (f"–{high}" if high > low else "") for section, (low, high) in passes.items()
            )
        )
    if spreads.size:
        lines.append(
            f"- between-pass spread of a measurement's median (slowest / fastest pass − 1): median "
            f"{np.median(spreads):.1%}, 90th percentile {np.percentile(spreads, 90):.1%}, largest {spreads.max():.1%}"
        )
    noisy = [(key, m) for key, m in results.measurements().items() if m.noisy]
    deciding = [(key, m) for key, m in noisy if decides_a_verdict(key.section, key.system)]
    if deciding:
        lines.append(
            "- **noisy measurements** (one timing pass stood out beyond the run's noise; the verdicts they decide "
            "say so): "
            + "; ".join(
                f"{key.section} `{m.system}` at {m.n_docs:,}"
                + (f" ({key.params})" if key.params else "")
                + f": {m.passes_text()}"
                for key, m in deciding
            )
        )
    if others := Counter(key.section for key, _ in noisy if not decides_a_verdict(key.section, key.system)):
        lines.append(
            "- noisy measurements whose latency decides no verdict: "
            + ", ".join(f"{count} in {section}" for section, count in others.items())
        )
    lines += [
        f"- **deliberately slowed** (`--slow-down`, to check `compare`): `{system}` ×{factor:g}"
        for system, factor in plan.slow_down.items()
    ]
    return lines


def _reading(claims: list[Verdict], targets: list[Verdict]) -> list[str]:
    """A few generated sentences: what held, what did not."""
    lines = []
    for label, verdicts in (("published claims", claims), ("targets", targets)):
        if not verdicts:
            continue
        held = [v for v in verdicts if v.verdict == SUPPORTED]
        failed = [v for v in verdicts if v.verdict == REFUTED]
        unsure = [v for v in verdicts if v.verdict == INCONCLUSIVE]
        unmeasured = len(verdicts) - len(held) - len(failed) - len(unsure)
        lines.append(
            f"- Of {len(verdicts)} {label} verdicts, {len(held)} are supported, {len(failed)} are not supported, "
            f"{len(unsure)} are inconclusive (the interval reaches within {MARGIN:.0%} of the bar) and {unmeasured} "
            "were not measured by this run."
        )
        lines += [f"  - **{v.claim}** for `{v.system}` does not hold: {v.measured}.{_edge(v)}" for v in failed]
        lines += [
            f"  - **{v.claim}** for `{v.system}` cannot be told apart from its bar: {v.measured}.{_edge(v)}"
            for v in unsure
        ]
    return lines or ["- Nothing to judge: this run measured no claim."]


def _edge(verdict: Verdict) -> str:
    return f" It stands at the edge of {' and '.join(verdict.neighbours)}." if verdict.neighbours else ""


def _dialogue_row(row: DialogueRow) -> dict[str, Any]:
    scores = row.scores
    return {
        "system": row.system,
        "memory": row.mode,
        "level": row.granularity,
        "questions": row.subset,
        "n": scores.queries,
        "recall@10": scores.recall,
        "recall_any@10 (hit)": scores.recall_any,
        "recall_all@10": scores.recall_all,
        "mrr": scores.mrr,
        "ndcg@10": scores.ndcg,
        "p50_ms": row.latency_p50_ms,
    }


def _swept(measurements: list[Measurement]) -> str:
    """Which parameter each system sweeps, from the measurements themselves."""
    swept: dict[str, list[str]] = {}
    for m in measurements:
        for name in m.params:
            swept.setdefault(f"`{name}`", [])
            if m.system not in swept[f"`{name}`"]:
                swept[f"`{name}`"].append(m.system)
    return "; ".join(f"{name} for {', '.join(systems)}" for name, systems in swept.items()) or "none swept"


def _stream_row(row: StreamRow) -> dict[str, Any]:
    """One system through one runbook: each kind of operation's p50 / p99 (ms), writes in cells/s."""
    if row.skipped:
        return {"runbook": row.runbook, "system": row.system, "status": f"skipped: {row.skipped}"}
    figures: dict[str, Any] = {"runbook": row.runbook, "system": row.system, "cells": row.cells}
    for operation in row.operations:
        if operation.kind in ("load", "checkpoint"):
            continue
        label = operation.kind.replace("_", " ")
        stats = operation.latency
        figures[label] = (
            f"{stats.p50_ms:.3g} / {stats.p99_ms:.3g}" if operation.kind != "sleep" else f"{operation.total_s:.3g} s"
        )
        if operation.kind == "write":
            figures["written/s"] = round(operation.cells_per_s)
    recalls = [c.recall_at_10 for c in row.checkpoints]
    figures |= {
        "recall min": min(recalls, default=float("nan")),
        "recall end": recalls[-1] if recalls else float("nan"),
    }
    if row.runbook == "agent-loop":
        figures["found own@1"] = row.found_own_at_1
    figures["status"] = f"FAILED: returned {row.deleted_returned} deleted cells" if row.deleted_returned else "ok"
    return figures


def _runbooks(results: RunResults) -> dict[str, str]:
    """Each runbook of the run once, with the description it was generated with."""
    return {row.runbook: row.description for row in results.streaming}


def _claim_list(verdicts: list[Verdict]) -> list[str]:
    """Each claim once: its id, what it states, where it comes from, its bar and conditions."""
    seen = {v.claim: v for v in verdicts}
    return [
        f'- `{v.claim}`: "{v.statement}" ({v.source}); bar: {v.bar}; measured on: {v.condition}' for v in seen.values()
    ]


def _verdict_row(verdict: Verdict) -> dict[str, str]:
    return {
        "claim": verdict.claim,
        "system": verdict.system,
        "verdict": verdict.shown,
        "measured": verdict.measured,
        "bar": verdict.bar,
        "condition": verdict.condition,
    }


def _needle_rows(needles: list[Measurement]) -> list[dict[str, Any]]:
    rows = []
    for key in sorted({(m.system, m.encoder) for m in needles}):
        mine = [m for m in needles if (m.system, m.encoder) == key]
        rows.append(
            {
                "system": key[0],
                "encoder": key[1],
                "haystacks": len(mine),
                "needles": sum(m.queries for m in mine),
                **{f"found_at_{k}": sum(m.found_at[k] for m in mine) for k in (1, 3, 10)},
                "mrr": sum(m.mrr * m.queries for m in mine) / sum(m.queries for m in mine),
            }
        )
    return rows


def _params(m: Measurement) -> str:
    return ", ".join(f"{k}={v}" for k, v in m.params.items())


def _pick(row: dict[str, Any], columns: Sequence[str]) -> dict[str, Any]:
    return {c: row.get(c, "") for c in columns}


def _table(rows: list[dict[str, Any]]) -> str:
    return str(tabulate(rows, headers="keys", tablefmt="github", floatfmt=".4g", intfmt=","))


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(dict.fromkeys(key for row in rows for key in row)))
        writer.writeheader()
        writer.writerows(rows)


def _plot_latency(path: Path, scaling: list[Measurement]) -> Path:
    figure, axes = plt.subplots(figsize=(8.5, 4.5))
    for system in sorted({m.system for m in scaling}, key=_reference_last):
        rows = sorted((m for m in scaling if m.system == system and not m.params), key=lambda m: m.n_docs)
        axes.plot([m.n_docs for m in rows], [m.latency.p50_ms for m in rows], label=system, **_style(system))
    axes.set(
        xscale="log",
        yscale="log",
        xlabel="cells (N)",
        ylabel="p50 query latency (ms)",
        title="Query latency vs N (k = 10)",
    )
    return _save(figure, axes, path)


def _plot_pareto(path: Path, scaling: list[Measurement], data: str) -> Path:
    largest = max(m.n_docs for m in scaling)
    points = [m for m in scaling if m.n_docs == largest]
    figure, axes = plt.subplots(figsize=(8.5, 4.5))
    for system in sorted({m.system for m in points}, key=_reference_last):
        mine = sorted((m for m in points if m.system == system), key=lambda m: m.latency.p50_ms)
        axes.plot([m.latency.p50_ms for m in mine], [m.recall_at_10 for m in mine], label=system, **_style(system))
    front = _pareto(points)
    axes.plot(
        [m.latency.p50_ms for m in front], [m.recall_at_10 for m in front], "k--", linewidth=1, label="Pareto front"
    )
    axes.set(
        xscale="log",
        xlabel="p50 query latency (ms)",
        ylabel="recall@10 vs exact",
        title=f"Recall vs latency at N = {largest:,} ({data})",
    )
    return _save(figure, axes, path)


def _plot_stream(path: Path, rows: list[StreamRow]) -> Path:
    """Recall and search latency along the stream, one line per system."""
    figure, (recall, latency) = plt.subplots(1, 2, figsize=(11, 4.5))
    for row in sorted((r for r in rows if r.checkpoints), key=lambda r: _reference_last(r.system)):
        written = [c.written for c in row.checkpoints]
        recall.plot(written, [c.recall_at_10 for c in row.checkpoints], label=row.system, **_style(row.system))
        latency.plot(written, [c.search_p50_ms for c in row.checkpoints], label=row.system, **_style(row.system))
    recall.set(xlabel="cells written", ylabel="recall@10 vs exact over the live cells", title="Recall along the stream")
    latency.set(
        xlabel="cells written",
        ylabel="p50 search at the checkpoint (ms)",
        yscale="log",
        title="Latency along the stream",
    )
    recall.grid(True, alpha=0.3)
    return _save(figure, latency, path)


def _reference_last(system: str) -> tuple[bool, str]:
    """Draw the engine's lines last, so no other line hides them."""
    return system.startswith("reference"), system


def _style(system: str) -> dict[str, Any]:
    """A system keeps its colour in every plot; the engine's systems stand out: thick lines, large markers;
    peers thin and a little transparent."""
    if system.startswith("reference"):
        return {"color": _color(system), "marker": "D", "markersize": 7, "linewidth": 2.5, "zorder": 3}
    return {"color": _color(system), "marker": "o", "markersize": 4, "linewidth": 1.2, "alpha": 0.75}


def _color(system: str) -> Any:
    """Registered systems by their place in the registry; others by a stable hash of their name."""
    palette = plt.get_cmap("tab20")
    known = list(SYSTEMS)
    position = known.index(system) if system in known else zlib.crc32(system.encode())
    return palette(position % palette.N)


def _save(figure: Any, axes: Any, path: Path) -> Path:
    for axis in (axes.xaxis, axes.yaxis):
        if axis.get_scale() == "log":  # minor labels of a narrow log axis pile up on each other
            axis.set_minor_formatter(ticker.NullFormatter())
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def _pareto(points: list[Measurement]) -> list[Measurement]:
    """Points no other point beats on both latency (lower) and recall (higher)."""
    front, best_recall = [], -1.0
    for m in sorted(points, key=lambda m: (m.latency.p50_ms, -m.recall_at_10)):
        if m.recall_at_10 > best_recall:
            front.append(m)
            best_recall = m.recall_at_10
    return front
