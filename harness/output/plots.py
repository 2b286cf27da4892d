"""The report's figures: latency against N, recall against latency (a sweep and its Pareto front), and a stream's
recall and latency as it is written.

A system keeps its colour and marker in every figure: the systems the default run draws have colours chosen to
read apart on white, any other system one of a palette by a checksum of its name (stable across processes,
unlike `hash`). Markers are hollow and drawn smaller the later a system is drawn (`styles`), so points that
coincide show as rings, one inside the other, instead of hiding one another.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib import ticker
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from harness.output.results import ConcurrencyRow, Measurement, StreamRow

COLOURS = {
    "reference": "#1f5fa8",
    "reference-dense": "#c0392b",
    "reference-slept": "#7b3fa0",
    "reference-chroma": "#117a8b",
    "flat-numpy": "#222222",
    "flat-chroma": "#8c564b",
    "kmeans": "#6b6b00",
    "faiss-ivf": "#d35400",
    "faiss-hnsw": "#2e7d32",
    "bm25": "#c2185b",
    "hybrid-rrf": "#5d6d7e",
    "reference-mcp": "#9a7d0a",
    "chroma-server": "#8e24aa",
}
"""The systems the default run draws, each in a colour that reads on white and apart from the others drawn with it
(the concurrency plot's servers too)."""
PALETTE = ("#0b6e4f", "#a23b72", "#3d5a80", "#9c6644", "#6a4c93", "#b5651d", "#2a9d8f", "#8d0801")
"""Any other system: one of these by a checksum of its name."""
MARKERS = "oDs^vP*Xh<>p"


def colour(system: str) -> str:
    """The system's colour in every figure of every run."""
    return COLOURS.get(system) or PALETTE[zlib.crc32(system.encode()) % len(PALETTE)]


def marker(system: str) -> str:
    """The system's marker in every figure of every run."""
    known = list(COLOURS)
    position = known.index(system) if system in known else zlib.crc32(system.encode())
    return MARKERS[position % len(MARKERS)]


def styles(systems: Sequence[str]) -> dict[str, dict[str, Any]]:
    """How each of the systems one panel draws is drawn, in drawing order (peers first, the engine's systems
    last, on top): its colour and marker, hollow, each of a size of its own (the engine's largest), so that
    points that coincide show as rings one inside the other; the engine's systems in thick lines, solid for the
    first and dashed or dotted for the others, so that lines that coincide show both; peers in thin dashed lines."""
    drawn = sorted(dict.fromkeys(systems), key=lambda s: (s.startswith("reference"), s))
    engines = [s for s in drawn if s.startswith("reference")]
    by_size = engines + [s for s in drawn if s not in engines]
    step = 9.0 / max(1, len(by_size) - 1)
    return {
        system: {
            "color": colour(system),
            "marker": marker(system),
            "markerfacecolor": "none",
            "markeredgewidth": 1.6,
            "markersize": 13.0 - step * by_size.index(system),
            "linewidth": 2.4 if system in engines else 1.2,
            "linestyle": ENGINE_LINES[engines.index(system) % len(ENGINE_LINES)] if system in engines else "--",
            "zorder": 3 if system in engines else 2,
            "label": system,
        }
        for system in drawn
    }


ENGINE_LINES = ("-", (0, (5, 2)), (0, (1, 1.5)), "-.")


def latency_vs_n(path: Path, measurements: Sequence[Measurement]) -> Path:
    """p50 against N for every system at its default setting (log-log)."""
    figure, axes = plt.subplots(figsize=(8.5, 4.8))
    defaults = [m for m in measurements if not m.params]
    for system, kind in styles([m.system for m in defaults]).items():
        rows = sorted((m for m in defaults if m.system == system), key=lambda m: m.n_docs)
        axes.plot([m.n_docs for m in rows], [m.latency.p50_ms for m in rows], **kind)
    axes.set(xscale="log", yscale="log", xlabel="cells (N)", ylabel="p50 of one query (ms, one core)")
    axes.set_title("Query latency against N (synthetic clusters, k = 10)")
    return _save(figure, axes, path)


def recall_vs_latency(path: Path, measurements: Sequence[Measurement], data: str) -> Path:
    """Every setting of every system at the largest size, recall against p50, and the Pareto front; the legend
    names each sweep's parameter and range, and says when its settings all read one point."""
    largest = max(m.n_docs for m in measurements)
    points = [m for m in measurements if m.n_docs == largest]
    figure, axes = plt.subplots(figsize=(9.5, 5.2))
    for system, kind in styles([m.system for m in points]).items():
        mine = sorted((m for m in points if m.system == system), key=lambda m: (m.latency.p50_ms, m.recall_at_10))
        kind["label"] += _sweep_words([m for m in mine if m.params])
        axes.plot([m.latency.p50_ms for m in mine], [m.recall_at_10 for m in mine], **kind)
    front = pareto(points)
    axes.plot(
        [m.latency.p50_ms for m in front], [m.recall_at_10 for m in front], "k:", linewidth=1, label="Pareto front"
    )
    axes.set(xscale="log", xlabel="p50 of one query (ms, one core)", ylabel="recall@10 against exact search")
    axes.set_title(f"Recall against latency at N = {largest:,}: {data}")
    return _save(figure, axes, path)


def _sweep_words(swept: Sequence[Measurement]) -> str:
    """ " (nprobe 1–32)", or " (target_recall 0.8–0.99: one point)" when every setting read the same recall and
    bytes (`sections.timed.same_at_every_setting` says why)."""
    if not swept:
        return ""
    [name] = swept[0].params
    values = [m.params[name] for m in swept]
    alike = len({(m.recall_at_10, m.describe.get("bytes_read_per_search")) for m in swept}) == 1 and len(swept) > 1
    return f" ({name} {min(values)}–{max(values)}{': one point' if alike else ''})"


def streaming(path: Path, rows: Sequence[StreamRow]) -> Path:
    """Recall along the stream for the systems queried by vector (what the ground truth is; text systems rank
    by words too), and every system's p50 search at each checkpoint."""
    figure, (recall, latency) = plt.subplots(1, 2, figsize=(12, 4.8))
    drawn = {r.system: r for r in rows if r.checkpoints}
    for system, kind in styles([s for s, r in drawn.items() if r.query == "vector"]).items():
        checkpoints = drawn[system].checkpoints
        recall.plot([c.written for c in checkpoints], [c.recall_at_10 for c in checkpoints], **kind)
    for system, kind in styles(list(drawn)).items():
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
    return _save(figure, latency, path)


def concurrency(path: Path, rows: Sequence[ConcurrencyRow]) -> Path:
    """Small multiples, one column per system (`concurrency_figure`)."""
    figure, _ = concurrency_figure(rows)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


CONCURRENCY_COLUMNS = 4
"""Systems side by side in the concurrency figure before it starts another row of them."""


def concurrency_figure(rows: Sequence[ConcurrencyRow]) -> tuple[Figure, list[tuple[Axes, Axes]]]:
    """For each system, QPS above and p99 below against clients, searches alone (solid) and while writing
    (dashed): a line through each level's median window, and a band from the level's lowest window to its
    highest, so that what the machine's noise moved reads as the band's width. Every system's panels share one
    scale per figure, so columns compare by eye. Returns the figure and each system's panels."""
    systems = list(dict.fromkeys(r.system for r in rows))
    across = min(CONCURRENCY_COLUMNS, len(systems))
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
            _log_ticks(axes)
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
        "color": colour(rows[0].system),
        "marker": marker(rows[0].system),
        "markerfacecolor": "none",
    }
    label = f"while writing {rows[0].writes_per_s:.0f}/s" if writing else "searches alone"
    clients = [r.clients for r in rows]
    axes.plot(clients, middle, linestyle="--" if writing else "-", label=label, **kind)
    low = [min(w, default=m) for w, m in zip(windows, middle)]
    high = [max(w, default=m) for w, m in zip(windows, middle)]
    axes.fill_between(clients, low, high, color=kind["color"], alpha=0.15 if writing else 0.3, linewidth=0)


def pareto(points: Sequence[Measurement]) -> list[Measurement]:
    """Points no other point beats on both latency (lower) and recall (higher)."""
    front, best_recall = [], -1.0
    for m in sorted(points, key=lambda m: (m.latency.p50_ms, -m.recall_at_10)):
        if m.recall_at_10 > best_recall:
            front.append(m)
            best_recall = m.recall_at_10
    return front


def _log_ticks(axes: Axes) -> None:
    """Ticks at 1, 2 and 5 of each decade of a log axis, written plainly (a narrow range has some), and a grid."""
    for axis in (axes.xaxis, axes.yaxis):
        if axis.get_scale() == "log":
            axis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
            axis.set_major_formatter(
                ticker.FuncFormatter(lambda value, _: f"{value:,.0f}" if value >= 1000 else f"{value:g}")
            )
            axis.set_minor_formatter(ticker.NullFormatter())
    axes.grid(True, which="major", alpha=0.3)


def _save(figure: Figure, axes: Axes, path: Path) -> Path:
    """The figure written, the legend beside `axes`."""
    _log_ticks(axes)
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path
