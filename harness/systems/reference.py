"""The reference engine behind the adapter protocol."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from reference import CellularMemory, MemoryConfig
from reference.encoders import MockEncoder

from ..protocol import Document, Query, SearchHit, SystemContext


class _GivenVectorsOnly(MockEncoder):
    """The harness always passes vectors; an encoder call would be a harness bug."""

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        raise AssertionError("the reference adapter must receive vectors from the harness")


class ReferenceSystem:
    capabilities = frozenset({"text", "vectors", "persist", "memory_scoring", "tunable", "groups"})
    query_params: ClassVar[dict[str, list[int]]] = {"group_top_k": [1, 2, 3, 5, 8, 13]}

    def __init__(self, context: SystemContext, *, name: str = "reference", persist: bool = False, **config: Any):
        if context.dim is None:
            raise ValueError("the reference adapter needs vectors")
        self.name = name
        path = str(context.workdir / "memory") if persist else None
        self.memory = CellularMemory(path=path, encoder=_GivenVectorsOnly(context.dim), config=MemoryConfig(**config))

    def add(self, docs: Sequence[Document]) -> None:
        self.memory.add(
            [d.text for d in docs],
            vectors=np.stack([d.vector for d in docs]),
            ids=[d.id for d in docs],
            metadata=[dict(d.metadata) for d in docs],
        )

    def search(self, query: Query, *, k: int) -> list[SearchHit]:
        return [SearchHit(h.id, h.score) for h in self.memory.search(query.text, k=k, vector=query.vector)]

    def set_query_params(self, **params: Any) -> None:
        self.memory.set_search_options(**params)

    def group_labels(self, doc_ids: Sequence[str]) -> list[int]:
        return [self.memory.get(doc_id).group_id for doc_id in doc_ids]

    def describe(self) -> dict[str, Any]:
        """Figures a report shows next to this system's results."""
        return self.memory.stats().as_dict()

    def close(self) -> None:
        self.memory.close()
