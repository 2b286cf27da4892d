"""What the report's figures share: each system's colour and marker, recall against latency (a sweep and its Pareto
front, drawn by the scaling and real-text experiments) and how a figure is saved. Each other figure is its
experiment's (`harness.experiments`).

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

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib import ticker
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from harness.output.results import Measurement

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
    return save(figure, axes, path)


def _sweep_words(swept: Sequence[Measurement]) -> str:
    """ " (nprobe 1–32)", or " (target_recall 0.8–0.99: one point)" when every setting read the same recall and
    bytes (`sections.timed.same_at_every_setting` says why)."""
    if not swept:
        return ""
    [name] = swept[0].params
    values = [m.params[name] for m in swept]
    alike = len({(m.recall_at_10, m.describe.get("bytes_read_per_search")) for m in swept}) == 1 and len(swept) > 1
    return f" ({name} {min(values)}–{max(values)}{': one point' if alike else ''})"


def pareto(points: Sequence[Measurement]) -> list[Measurement]:
    """Points no other point beats on both latency (lower) and recall (higher)."""
    front, best_recall = [], -1.0
    for m in sorted(points, key=lambda m: (m.latency.p50_ms, -m.recall_at_10)):
        if m.recall_at_10 > best_recall:
            front.append(m)
            best_recall = m.recall_at_10
    return front


def log_ticks(axes: Axes) -> None:
    """Ticks at 1, 2 and 5 of each decade of a log axis, written plainly (a narrow range has some), and a grid."""
    for axis in (axes.xaxis, axes.yaxis):
        if axis.get_scale() == "log":
            axis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
            axis.set_major_formatter(
                ticker.FuncFormatter(lambda value, _: f"{value:,.0f}" if value >= 1000 else f"{value:g}")
            )
            axis.set_minor_formatter(ticker.NullFormatter())
    axes.grid(True, which="major", alpha=0.3)


def save(figure: Figure, axes: Axes, path: Path) -> Path:
    """The figure written, the legend beside `axes`."""
    log_ticks(axes)
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path
