"""Flat RAG: every vector in one embedded Chroma collection (the published claims' baseline), its metadata stored
beside it, so that a `where` filter is Chroma's own filtered search."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import chromadb
from chromadb.config import Settings

from harness.protocol import Document, Query, SearchHit, SystemContext, check_k, check_where

from .vectors import stack_unit, vector_of


class FlatChroma:
    name = "flat-chroma"
    capabilities = frozenset({"vectors", "persist", "delete", "filters"})

    def __init__(self, context: SystemContext, *, server: str | None = None) -> None:
        """Embedded in the context's work directory, or in the Chroma server at `server` ("host:port")."""
        settings = Settings(anonymized_telemetry=False)
        self._client: Any  # chromadb's ClientAPI types no close()
        if server:
            host, _, port = server.rpartition(":")
            self._client = chromadb.HttpClient(host=host, port=int(port), settings=settings)
        else:
            self._client = chromadb.PersistentClient(path=str(context.workdir / "flat-chroma"), settings=settings)
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
                metadatas=[dict(d.metadata) or None for d in chunk],
            )

    def delete(self, doc_ids: Sequence[str]) -> None:
        for start in range(0, len(doc_ids), self._batch):
            self._collection.delete(ids=list(doc_ids[start : start + self._batch]))

    def search(self, query: Query, *, k: int) -> list[SearchHit]:
        k = check_k(k)
        result = self._collection.query(
            query_embeddings=vector_of(query)[None, :],
            n_results=k,
            where=None if query.where is None else check_where(query.where),
            include=["distances"],
        )
        distances = result["distances"]
        if distances is None:
            raise RuntimeError("Chroma answered the flat collection's query without distances")
        return [SearchHit(i, 1.0 - d) for i, d in zip(result["ids"][0], distances[0])]

    def close(self) -> None:
        self._client.close()
