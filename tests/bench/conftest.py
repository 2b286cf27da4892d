"""Shared 100K data for the engine benchmarks, and a summary of ratios written at the end.

Figures come from pytest-benchmark's own statistics in this run; nothing is typed by hand.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from harness.data.generators.vectors import clustered_unit_vectors, exact_top_k
from harness.measure.timing import one_core
from harness.output.perf_summary import PerfSummary
from reference import CellularMemory
from reference.encoders import MockEncoder

N = int(os.environ.get("MAGBENCH_PERF_N", "100000"))
QUERIES = 200
FIGURES: dict[str, float] = {}
RATIOS: dict[str, tuple[str, str]] = {}
ROUNDS: dict[str, list[float]] = {}


@pytest.fixture(scope="session")
def data():
    return clustered_unit_vectors(N, dim=384, clusters=100, queries=QUERIES, seed=7)


@pytest.fixture(scope="session")
def truth(data):
    return exact_top_k(data.vectors, data.queries, 10)


def load_engine_code() -> None:
    """Write, search and close a memory of 5,000 text cells (probed, not flat), so that the engine's compiled
    kernels are loaded (and compiled, on a fresh install) before anything is timed, as a baseline's native code is
    at import; the memory itself is collected."""
    vectors = clustered_unit_vectors(5_000, 384, 50, spread=1.0, queries=1, seed=5).vectors
    with CellularMemory(encoder=MockEncoder(384)) as memory:
        memory.add([f"cell {i}" for i in range(len(vectors))], vectors=vectors)
        memory.search(vectors[0], k=10)
        memory.search("cell 7", k=10)
        assert memory.stats().flat_searches == 0
    gc.collect()  # a closed memory's cycles: what is left behind is code, not garbage a later pass frees


def time_queries(
    benchmark, search: Callable[..., object], *, rounds: int, warmup_rounds: int, setup: Callable | None = None
) -> None:
    """Time single queries as the harness does: on one core (BLAS and OpenMP pools held to one thread);
    `setup` (untimed) runs before each and returns the query's arguments."""
    with one_core():
        benchmark.pedantic(search, setup=setup, rounds=rounds, warmup_rounds=warmup_rounds)


def record(name: str, value: float) -> None:
    FIGURES[name] = value


def record_ratio(name: str, numerator: str, denominator: str, *, rounds: Sequence[float] = ()) -> None:
    """A figure the summary derives at the end: `numerator` / `denominator`, when both were recorded; `rounds`: the
    ratio of each round the two were measured side by side, whose quartiles the summary keeps as its noise."""
    RATIOS[name] = (numerator, denominator)
    if len(rounds):
        ROUNDS[name] = list(rounds)


def pytest_sessionfinish(session: pytest.Session) -> None:
    if not FIGURES:
        return
    derived = dict(FIGURES)
    for search in [name for name in derived if name.endswith("search_s") and name != "brute_force_s"]:
        if "brute_force_s" in derived:
            derived[f"{search.removesuffix('_s')}_speedup_vs_brute_force"] = derived["brute_force_s"] / derived[search]
    summary = PerfSummary.of(derived, RATIOS, ROUNDS)
    derived.update({name: ratio.value for name, ratio in summary.ratios.items()})
    bands = {
        name: f" (rounds' quartiles {r.low:.3g}–{r.high:.3g})" for name, r in summary.ratios.items() if name in ROUNDS
    }
    lines = [f"| {name} | {value:.6g}{bands.get(name, '')} |" for name, value in sorted(derived.items())]
    title = f"Engine figures at N = {N:,}, or one million where the name says so (medians of this run)"
    table = "\n".join([title, "", "| figure | value |", "|---|---|", *lines])
    out = Path(session.config.rootpath) / "reports" / "perf-summary.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text(table + "\n")
    replace(summary, figures=derived).write(out.with_suffix(".json"))
    session.config.get_terminal_writer().line("\n" + table)
