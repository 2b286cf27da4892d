"""Flat RAG: every vector in one embedded Chroma collection (the published claims' baseline)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import chromadb
from chromadb.config import Settings

from harness.protocol import Document, Query, SearchHit, SystemContext, check_k

from .vectors import stack_unit, vector_of


class FlatChroma:
    name = "flat-chroma"
    capabilities = frozenset({"vectors", "persist", "delete"})

    def __init__(self, context: SystemContext) -> None:
        settings = Settings(anonymized_telemetry=False)
        self._client: Any = chromadb.PersistentClient(  # chromadb's ClientAPI types no close()
            path=str(context.workdir / "flat-chroma"), settings=settings
        )
        self._collection = self._client.get_or_create_collection(
            "flat", embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
        )
        self._batch = self._client.get_max_batch_size()

    def add(self, docs: Sequence[Document]) -> None:
        matrix = stack_unit(docs)
        for start in range(0, len(docs), self._batch):
            chunk = docs[start : start + self._batch]
            self._collection.add(
                ids=[d.id for d in chunk],
                embeddings=matrix[start : start + len(chunk)],
                documents=[d.text for d in chunk],
            )

    def delete(self, doc_ids: Sequence[str]) -> None:
        for start in range(0, len(doc_ids), self._batch):
            self._collection.delete(ids=list(doc_ids[start : start + self._batch]))

    def search(self, query: Query, *, k: int) -> list[SearchHit]:
        k = check_k(k)
        result = self._collection.query(query_embeddings=vector_of(query)[None, :], n_results=k, include=["distances"])
        distances = result["distances"]
        if distances is None:
            raise RuntimeError("Chroma answered the flat collection's query without distances")
        return [SearchHit(i, 1.0 - d) for i, d in zip(result["ids"][0], distances[0])]

    def close(self) -> None:
        self._client.close()
