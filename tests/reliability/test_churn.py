"""Churn: rounds of random deletes, re-adds of deleted ids, new cells, sleep (splits and merges) and
reopens of a persistent memory. After every round each live cell is found by its own vector at k = 1
and no deleted cell is ever returned (the failure vector-store users report after delete/upsert storms)."""

from __future__ import annotations

import numpy as np

from harness.data.generators.vectors import clustered_unit_vectors
from reference import CellularMemory
from reference.encoders import MockEncoder
from tests.reliability.counts import record

CELLS, ROUNDS, CHURN = 2_400, 5, 300


def test_churn_keeps_every_live_cell_findable_and_no_deleted_one(tmp_path):
    data = clustered_unit_vectors(CELLS + ROUNDS * CHURN, 48, clusters=12, spread=1.0, seed=8)
    vector_of = {f"c{i}": v for i, v in enumerate(data.vectors)}
    rng = np.random.default_rng(0)
    live = [f"c{i}" for i in range(CELLS)]
    deleted: list[str] = []
    fresh = iter(range(CELLS, CELLS + ROUNDS * CHURN))
    stats = {"deleted": 0, "re_added": 0, "added": 0, "splits": 0, "merges": 0, "checked": 0}
    memory = CellularMemory(path=str(tmp_path), encoder=MockEncoder(48))
    try:
        memory.add(live, vectors=np.stack([vector_of[i] for i in live]), ids=live)
        for _ in range(ROUNDS):
            gone = [str(i) for i in rng.choice(live, size=CHURN, replace=False)]
            memory.delete(gone)
            back = [str(i) for i in rng.choice(deleted, size=min(len(deleted), CHURN // 2), replace=False)]
            new = [f"c{next(fresh)}" for _ in range(CHURN - len(back))]
            memory.add(back + new, vectors=np.stack([vector_of[i] for i in back + new]), ids=back + new)
            live = sorted((set(live) - set(gone)) | set(back) | set(new))
            deleted = sorted((set(deleted) | set(gone)) - set(back))
            report = memory.consolidate()
            memory.close()
            memory = CellularMemory(path=str(tmp_path), encoder=MockEncoder(48))
            memory.check_invariants()
            assert sorted(memory.ids()) == live
            lost = [i for i in live if memory.search(vector_of[i], k=1)[0].id != i]
            assert not lost, f"live cells not found by their own vector: {lost[:5]}"
            ghosts = {h.id for i in deleted[:200] for h in memory.search(vector_of[i], k=5)} & set(deleted)
            assert not ghosts, f"deleted cells returned: {sorted(ghosts)[:5]}"
            stats = {
                "deleted": stats["deleted"] + len(gone),
                "re_added": stats["re_added"] + len(back),
                "added": stats["added"] + len(new),
                "splits": stats["splits"] + report.splits,
                "merges": stats["merges"] + len(report.merges),
                "checked": stats["checked"] + len(live),
            }
    finally:
        memory.close()
    record("churn", rounds=ROUNDS, cells=len(live), **stats)
    assert stats["re_added"] > 0
