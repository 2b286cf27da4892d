"""The residency stress run (`residency_stress.py`) at a small size, on an embedded store and on a namespace of a
Chroma server started here, with clustered and with hashed bag-of-words vectors: every worker returns, no call
raises, no `NotFoundError` for a cell that exists, every acknowledged write is there after reopen and no deleted
cell is, and a search of every scope meets the recall target. `tox -e perf` runs it larger and writes the report
(`tests/bench/test_residency_stress.py`)."""

from __future__ import annotations

import uuid
from dataclasses import replace

import pytest

from reference import CellularMemory, MemoryConfig
from reference.common.chroma import server_client
from reference.encoders import MockEncoder
from tests.reliability.counts import record
from tests.reliability.residency_stress import Stress, run

SIZE = Stress(scopes=16, cells=40, rounds=12, queries=60, timeout=120.0)
"""Small: a few seconds a run. The budget is a tenth of the cells."""


@pytest.mark.parametrize("kind", ["clustered", "hashed"])
@pytest.mark.parametrize("layout", ["embedded", "server"])
def test_scopes_beyond_ram_under_every_kind_of_call_at_once(request, tmp_path, layout, kind):
    config = MemoryConfig(lexical=False)
    if layout == "embedded":
        path = str(tmp_path / "store")

        def open_memory(budget: int | None) -> CellularMemory:
            return CellularMemory(path, encoder=MockEncoder(SIZE.dim), config=replace(config, resident_cells=budget))
    else:
        address = request.getfixturevalue("chroma_server").address
        config = replace(config, namespace=f"t{uuid.uuid4().hex[:12]}", lease_seconds=60.0)

        def open_memory(budget: int | None) -> CellularMemory:
            return CellularMemory(
                client=server_client(address),
                encoder=MockEncoder(SIZE.dim),
                config=replace(config, resident_cells=budget),
            )

    outcome = run(open_memory, kind, SIZE)
    record(f"residency_stress[{layout}-{kind}]", **outcome.figures())
    assert outcome.stuck_workers == 0
    assert outcome.errors == {} and outcome.spurious_not_found == 0
    assert outcome.missing_after_reopen == 0 and outcome.deleted_returned == 0
    assert outcome.cells == outcome.acknowledged - outcome.deleted
    assert outcome.recall_at_10 >= outcome.target_recall
