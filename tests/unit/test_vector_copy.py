"""One float32 copy of the vectors, held by the NumPy group index by row, beside the int8 codes it probes."""

import numpy as np
import pytest

from harness.data.generators.vectors import clustered_unit_vectors
from reference import CellularMemory, MemoryConfig
from reference.encoders import MockEncoder

DIM = 32
NEVER_STOPS = MemoryConfig(probe_margin=2.0, target_recall=None, lexical=False)
FLAT = MemoryConfig(probe_cost_cells=10**9, lexical=False)


def filled(config: MemoryConfig, data) -> tuple[CellularMemory, list[str]]:
    mem = CellularMemory(encoder=MockEncoder(DIM), config=config)
    ids = [f"c{i}" for i in range(len(data.vectors))]
    return mem, mem.add([f"cell {i}" for i in range(len(data.vectors))], vectors=data.vectors, ids=ids)


def read_everything(mem: CellularMemory) -> None:
    """A budget one cell short of the memory, so that it probes (not flat) and its last group reads the rest."""
    cells = mem.stats().cells
    mem.set_search_options(probe_per_sqrt_n=(cells - 1.5) / np.sqrt(cells), probe_per_k=1)


def test_a_probe_that_reads_every_cell_answers_as_flat_search_with_exact_scores():
    """Codes choose the candidates and the float32 vectors score them: the scores are exact cosines, and the
    hits those of exact search but where a code score's rounding reorders a near-tie at the cut."""
    data = clustered_unit_vectors(3_000, DIM, clusters=10, spread=1.0, queries=40, seed=5)
    probed, ids = filled(NEVER_STOPS, data)
    flat, _ = filled(FLAT, data)
    unit = data.vectors / np.linalg.norm(data.vectors, axis=1, keepdims=True)
    with probed, flat:
        assert not probed._state.table.keep_vectors and probed._state.index.codes.dtype == np.int8
        for mem in (probed, flat):
            mem.delete(ids[::7])
            mem.consolidate()
            mem.check_invariants()
        read_everything(probed)
        same = 0
        for query in data.queries:
            hits = probed.search(query, k=10)
            exact = unit[[ids.index(h.id) for h in hits]] @ (query / np.linalg.norm(query))
            np.testing.assert_allclose([h.score for h in hits], exact, atol=1e-5)
            assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
            same += [h.id for h in hits] == [h.id for h in flat.search(query, k=10)]
        assert same >= 0.95 * len(data.queries)
        assert probed.stats().flat_searches == 0 and flat.stats().flat_searches == len(data.queries)
        kept = ids[1]
        assert np.allclose(probed.get(kept).vector, unit[1], atol=1e-6)


def test_bytes_read_per_search_counts_codes_for_a_probe_and_float32_vectors_for_a_flat_search():
    data = clustered_unit_vectors(3_000, DIM, clusters=10, spread=1.0, queries=5, seed=6)
    probed, _ = filled(NEVER_STOPS, data)
    flat, _ = filled(FLAT, data)
    read_everything(probed)
    with probed, flat:
        for query in data.queries:
            probed.search(query, k=10)
            flat.search(query, k=10)
        groups = probed.stats().groups
        float_row, code_row = DIM * 4, DIM + 4  # a float32 vector; int8 codes and a float32 scale
        assert flat.stats().bytes_read_per_search == 3_000 * float_row
        rescored = (probed.stats().bytes_read_per_search - (groups + 3_000) * code_row) / float_row
        assert 10 <= rescored <= 20  # the best 10 + 10 by codes, less those their codes rule out


@pytest.mark.parametrize("rows", [np.zeros((1, DIM)), np.full((1, DIM), 1e-30)])
def test_codes_of_a_tiny_or_zero_row_are_finite(rows):
    from reference.kernels.quantize import quantized

    codes, scales = quantized(rows.astype(np.float32))
    assert np.isfinite(scales).all() and np.abs(codes.astype(np.float32) * scales[:, None] - rows).max() < 1e-6


@pytest.mark.parametrize("unit", [True, False], ids=["unit rows", "rows to normalise"])
def test_the_memory_keeps_its_vectors_apart_from_the_arrays_it_was_given(unit):
    """The first write's vectors become the index's store without a copy (`NumpyGroupIndex.add`): never the
    caller's own array, which the caller may overwrite."""
    data = clustered_unit_vectors(600, DIM, clusters=6, spread=1.0, queries=8, seed=7)
    given = np.ascontiguousarray(data.vectors if unit else 3 * data.vectors, dtype=np.float32)
    with CellularMemory(encoder=MockEncoder(DIM), config=MemoryConfig(lexical=False)) as mem:
        ids = mem.add([f"cell {i}" for i in range(len(given))], vectors=given)
        found = [mem.search(query, k=5) for query in data.queries]
        first = mem.get(ids[0]).vector.copy()
        given[:] = np.random.default_rng(0).standard_normal(given.shape)
        assert np.array_equal(mem.get(ids[0]).vector, first)
        assert [mem.search(query, k=5) for query in data.queries] == found
        mem.check_invariants()
