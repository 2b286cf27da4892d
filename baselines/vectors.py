"""NumPy helpers shared by the vector baselines. Baselines never call engine code: an engine change must
never move the systems it is compared against."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from harness.protocol import Document, vector_of

__all__ = ["refuse_other_scopes", "similarities", "stack_unit", "top_k", "unit_matrix", "vector_of"]


def similarities(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Inner product of the query with every row (cosine, for unit rows), streaming the rows once."""
    scores: np.ndarray = np.vecdot(matrix, query)
    return scores


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the k largest scores, best first (ties: the earlier position)."""
    if k < len(scores):
        positions = np.argpartition(-scores, k - 1)[:k]
        return positions[np.lexsort((positions, -scores[positions]))]
    return np.argsort(-scores, kind="stable")


def stack_unit(docs: Sequence[Document]) -> np.ndarray:
    """The documents' vectors as one float32 matrix of unit rows."""
    matrix = np.stack([vector_of(d) for d in docs]).astype(np.float32)
    unit: np.ndarray = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    return unit


def unit_matrix(docs: Sequence[Document], dim: int) -> np.ndarray:
    """`stack_unit` of documents whose vectors must have `dim` dimensions (ValueError otherwise)."""
    matrix = stack_unit(docs)
    if matrix.shape[1] != dim:
        raise ValueError(f"vectors must have {dim} dimensions, got {matrix.shape[1]}")
    return matrix


def refuse_other_scopes(held: Iterable[tuple[str, str | None]], wanted: Mapping[str, str]) -> None:
    """ValueError if any stored id (`held`: id and the scope it is stored in) is written to another scope than
    `wanted` gives it: ids are unique across scopes."""
    taken = sorted(doc_id for doc_id, scope in held if scope != wanted[doc_id])
    if taken:
        raise ValueError(f"ids held in another scope (ids are unique across scopes): {taken[:10]}")


class Rows:
    """Unit vectors and their document ids in a growing float32 buffer (doubling, as a user would keep
    them); a delete moves the last row into the gap."""

    def __init__(self, dim: int) -> None:
        self._matrix = np.zeros((0, dim), dtype=np.float32)
        self.ids: list[str] = []
        self._row_of: dict[str, int] = {}

    @property
    def matrix(self) -> np.ndarray:
        """The live rows (a view)."""
        return self._matrix[: len(self.ids)]

    def add(self, docs: Sequence[Document]) -> None:
        count, needed = len(self.ids), len(self.ids) + len(docs)
        if needed > len(self._matrix):
            grown = np.zeros((max(needed, 2 * len(self._matrix), 1024), self._matrix.shape[1]), dtype=np.float32)
            grown[:count] = self._matrix[:count]
            self._matrix = grown
        self._matrix[count:needed] = stack_unit(docs)
        self._row_of.update((d.id, count + i) for i, d in enumerate(docs))
        self.ids += [d.id for d in docs]

    def delete(self, doc_ids: Sequence[str]) -> None:
        for doc_id in doc_ids:
            row = self._row_of.pop(doc_id, None)
            if row is None:
                continue
            last = len(self.ids) - 1
            if row != last:
                self._matrix[row] = self._matrix[last]
                self.ids[row] = self.ids[last]
                self._row_of[self.ids[row]] = row
            self.ids.pop()
