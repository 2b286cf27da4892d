"""One copy of the vectors in a large memory: the group blocks; small memories keep a flat copy too."""

import numpy as np
import pytest

from harness.generators.vectors import clustered_unit_vectors
from reference import CellularMemory, MemoryConfig
from reference.encoders import MockEncoder

DIM = 32


def filled(config: MemoryConfig, data) -> tuple[CellularMemory, list[str]]:
    mem = CellularMemory(encoder=MockEncoder(DIM), config=config)
    ids = [f"c{i}" for i in range(len(data.vectors))]
    return mem, mem.add([f"cell {i}" for i in range(len(data.vectors))], vectors=data.vectors, ids=ids)


@pytest.mark.parametrize("probe_cost_cells", [10**9, 0], ids=["flat", "probing"])
def test_a_memory_past_the_flat_copy_answers_as_one_that_keeps_it(probe_cost_cells):
    data = clustered_unit_vectors(3_000, DIM, clusters=10, spread=1.0, queries=40, seed=5)
    one_copy, ids = filled(MemoryConfig(flat_copy_rows=500, probe_cost_cells=probe_cost_cells), data)
    two_copies, _ = filled(MemoryConfig(probe_cost_cells=probe_cost_cells), data)
    with one_copy, two_copies:
        assert not one_copy._state.table.keep_vectors and two_copies._state.table.keep_vectors
        for mem in (one_copy, two_copies):
            mem.delete(ids[::7])
            mem.consolidate()
            mem.check_invariants()
        for query in data.queries:
            assert [(h.id, round(h.score, 5)) for h in one_copy.search(query, k=10)] == [
                (h.id, round(h.score, 5)) for h in two_copies.search(query, k=10)
            ]
        kept = ids[1]
        assert np.allclose(one_copy.get(kept).vector, data.vectors[1] / np.linalg.norm(data.vectors[1]), atol=1e-6)
        assert one_copy.stats().flat_searches == (len(data.queries) if probe_cost_cells else 0)


def test_flat_copy_rows_below_zero_is_refused():
    with pytest.raises(ValueError, match="flat_copy_rows"):
        MemoryConfig(flat_copy_rows=-1)
