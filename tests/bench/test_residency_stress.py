"""The residency stress run (`tests/reliability/residency_stress.py`) at size: `MAGBENCH_STRESS_SCOPES` scopes
(default 200) of 50 cells, `resident_cells` a tenth of them, two writers, two id readers, a searcher of every
scope, a deleter and sleep passes at once, on an embedded store and on a namespace of a Chroma server started here,
with clustered and with hashed bag-of-words vectors. Writes `reports/residency-stress.md` (and `.json`): calls,
errors, the longest call, spurious `NotFoundError`s, acknowledged writes missing after reopen, and recall@10 of
searches of every scope against exact search, beside the target. Run by `tox -e perf` (or
`pytest -n 0 tests/bench/test_residency_stress.py --benchmark-only`)."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from harness.measure.server_processes import ChromaServer
from reference import CellularMemory, MemoryConfig
from reference.common.chroma import server_client
from reference.encoders import MockEncoder
from tests.reliability.residency_stress import Stress, run

SIZE = Stress(scopes=int(os.environ.get("MAGBENCH_STRESS_SCOPES", "200")), cells=50, dim=256, rounds=100, queries=200)
COLUMNS = (
    "calls",
    "errors",
    "longest_call_s",
    "spurious_not_found",
    "acknowledged",
    "missing_after_reopen",
    "deleted_returned",
    "stuck_workers",
    "recall_at_10",
    "target_recall",
    "estimated_recall",
    "probe_margin",
    "probe_reach",
    "flat_share",
    "loads",
    "cells",
    "budget",
)
RESULTS: dict[str, dict[str, Any]] = {}


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[ChromaServer]:
    with ExitStack() as running:
        yield running.enter_context(ChromaServer(tmp_path_factory.mktemp("stress-server")))
    _write_report(Path(__file__).resolve().parents[2] / "reports")


@pytest.mark.parametrize("kind", ["clustered", "hashed"])
@pytest.mark.parametrize("layout", ["embedded", "server"])
def test_residency_stress(benchmark, request, tmp_path, server, layout, kind):
    config = MemoryConfig(lexical=False)
    if layout == "embedded":
        path = str(tmp_path / "store")

        def open_memory(budget: int | None) -> CellularMemory:
            return CellularMemory(path, encoder=MockEncoder(SIZE.dim), config=replace(config, resident_cells=budget))
    else:
        namespace = f"stress{uuid.uuid4().hex[:8]}"

        def open_memory(budget: int | None) -> CellularMemory:
            return CellularMemory(
                client=server_client(server.address),
                encoder=MockEncoder(SIZE.dim),
                config=replace(config, namespace=namespace, resident_cells=budget, lease_seconds=60.0),
            )

    outcome = benchmark.pedantic(lambda: run(open_memory, kind, SIZE), rounds=1, iterations=1)
    RESULTS[f"{layout} / {kind}"] = outcome.figures()
    assert outcome.stuck_workers == 0 and outcome.spurious_not_found == 0 and outcome.missing_after_reopen == 0
    assert outcome.recall_at_10 >= outcome.target_recall


def _write_report(folder: Path) -> None:
    if not RESULTS:
        return
    folder.mkdir(exist_ok=True)
    title = (
        f"Residency stress: {SIZE.scopes} scopes of {SIZE.cells} cells, resident_cells {SIZE.budget_share:.0%} of "
        f"them; {SIZE.writers} writers, {SIZE.readers} id readers, {SIZE.searchers} searcher of every scope, "
        f"{SIZE.deleters} deleter and sleep passes at once, {SIZE.rounds} calls each; recall@10 of {SIZE.queries} "
        "searches of every scope after reopen, against exact search"
    )
    header = "| store / vectors | " + " | ".join(COLUMNS) + " |"
    rows = [
        f"| {name} | " + " | ".join(_shown(figures[column]) for column in COLUMNS) + " |"
        for name, figures in RESULTS.items()
    ]
    longest = [
        f"- {name}: " + ", ".join(f"{call} {spent:.3g}" for call, spent in figures["longest_by_call"].items())
        for name, figures in RESULTS.items()
    ]
    table = "\n".join(
        [
            title,
            "",
            header,
            "|---" * (len(COLUMNS) + 1) + "|",
            *rows,
            "",
            "Longest call of each kind, seconds:",
            "",
            *longest,
        ]
    )
    (folder / "residency-stress.md").write_text(table + "\n")
    (folder / "residency-stress.json").write_text(json.dumps(RESULTS, indent=2, default=str))


def _shown(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)
