"""Shared 100K data for the engine benchmarks, and a summary of ratios written at the end.

Figures come from pytest-benchmark's own statistics in this run; nothing is typed by hand.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.data.generators.vectors import clustered_unit_vectors, exact_top_k
from harness.measure.timing import one_core

N = int(os.environ.get("MAGBENCH_PERF_N", "100000"))
QUERIES = 200
FIGURES: dict[str, float] = {}
RATIOS: dict[str, tuple[str, str]] = {}


@pytest.fixture(scope="session")
def data():
    return clustered_unit_vectors(N, dim=384, clusters=100, queries=QUERIES, seed=7)


@pytest.fixture(scope="session")
def truth(data):
    return exact_top_k(data.vectors, data.queries, 10)


def time_queries(
    benchmark, search: Callable[..., object], *, rounds: int, warmup_rounds: int, setup: Callable | None = None
) -> None:
    """Time single queries as the harness does: on one core (BLAS and OpenMP pools held to one thread);
    `setup` (untimed) runs before each and returns the query's arguments."""
    with one_core():
        benchmark.pedantic(search, setup=setup, rounds=rounds, warmup_rounds=warmup_rounds)


def record(name: str, value: float) -> None:
    FIGURES[name] = value


def record_ratio(name: str, numerator: str, denominator: str) -> None:
    """A figure the summary derives at the end: `numerator` / `denominator`, when both were recorded."""
    RATIOS[name] = (numerator, denominator)


def pytest_sessionfinish(session: pytest.Session) -> None:
    if not FIGURES:
        return
    derived = dict(FIGURES)
    for search in [name for name in derived if name.endswith("search_s") and name != "brute_force_s"]:
        if "brute_force_s" in derived:
            derived[f"{search.removesuffix('_s')}_speedup_vs_brute_force"] = derived["brute_force_s"] / derived[search]
    for name, (numerator, denominator) in RATIOS.items():
        if numerator in FIGURES and denominator in FIGURES:
            derived[name] = FIGURES[numerator] / FIGURES[denominator]
    lines = [f"| {name} | {value:.6g} |" for name, value in sorted(derived.items())]
    title = f"Engine figures at N = {N:,}, or one million where the name says so (medians of this run)"
    table = "\n".join([title, "", "| figure | value |", "|---|---|", *lines])
    out = Path(session.config.rootpath) / "reports" / "perf-summary.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text(table + "\n")
    out.with_suffix(".json").write_text(json.dumps(derived, indent=2))
    session.config.get_terminal_writer().line("\n" + table)
