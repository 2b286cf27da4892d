"""Compiled loops (numba), one module per job: `probe.py` (the second search stage over the group index's arena),
`scan.py` (exact scores), `quantize.py` (int8 codes), `arena.py` (writing the arena), `grouping.py` (what ingest
and sleep compute per group), `bm25.py` (lexical scoring), `context.py` (a text search's episode context), `rows.py`
(a query's row checks), and `jit.py`, how they are compiled.

The arena holds every group's cells as int8 codes in one matrix; group g owns the slots `starts[g] : starts[g] +
sizes[g]` (`index.NumpyGroupIndex`), and the float32 vectors are kept by row for exact scores. Reading it in a
compiled loop spares a Python step per group. The kernels are compiled on first use and cached beside their modules
(`cache=True`). Numba's cache checks a kernel's own file only: after editing a helper that kernels of another
module call (`jit.py`, `quantize.py`, `intrinsics.py`), clear the cache (`find reference -name '*.nb[ic]' -delete`).
"""
