"""MemPalace in its raw mode (extra `mempalace`): verbatim texts in its ChromaDB backend, the harness's vectors
supplied (`caller_vectors`, so no embedding function is built and nothing is downloaded).

This is the path MemPalace's own LoCoMo and LongMemEval scripts measure as "raw": documents added to a palace's
drawer collection and searched by vector. Each document's id is its drawer id; its scope is a metadata field
(`SCOPE_KEY`) that a scoped search adds to its `where`, which MemPalace's backend hands to Chroma as given. Ids are
unique across scopes: a write of an id another scope holds is refused. Chroma's upsert keeps metadata keys the new
version lacks, so `upsert` deletes the stored version first. Chroma's telemetry is off
(`ANONYMIZED_TELEMETRY=False`, set before MemPalace imports Chroma).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from harness.protocol import Document, Query, SearchHit, SystemContext, check_k, check_where
from harness.systems.registry import missing_extra

from .vectors import refuse_other_scopes, unit_matrix, vector_of

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
try:
    from mempalace.backends.base import PalaceRef
    from mempalace.backends.chroma import ChromaBackend
except ModuleNotFoundError as error:
    raise missing_extra("mempalace", "mempalace", error) from None

SCOPE_KEY = "magbench_scope"
COLLECTION = "mempalace_drawers"
"""The drawer collection's name in a palace (MemPalace's own)."""
BATCH = 1000


class MemPalaceRaw:
    name = "mempalace"
    capabilities = frozenset({"vectors", "persist", "delete", "scopes", "filters", "update", "get"})

    def __init__(self, context: SystemContext) -> None:
        self._dim = context.vector_dim()
        self._lock = threading.RLock()
        self._backend = ChromaBackend()
        self._palace = PalaceRef(id="magbench", local_path=str(context.workdir / "mempalace"))
        self._drawers = self._backend.get_collection(
            palace=self._palace, collection_name=COLLECTION, create=True, options={"caller_vectors": True}
        )

    def add(self, docs: Sequence[Document]) -> None:
        self.upsert(docs)

    def upsert(self, docs: Sequence[Document]) -> None:
        """Writes the documents, replacing those stored under their ids (their old metadata gone with them)."""
        if not docs:
            return
        for doc in docs:
            if SCOPE_KEY in doc.metadata:
                raise ValueError(f"document {doc.id}: metadata key {SCOPE_KEY!r} is reserved for the scope")
        matrix = unit_matrix(docs, self._dim)
        with self._lock:
            held = self._scopes_of([d.id for d in docs])
            refuse_other_scopes(held.items(), {d.id: d.scope for d in docs})
            if held:
                self._drawers.delete(ids=list(held))
            for start in range(0, len(docs), BATCH):
                chunk = docs[start : start + BATCH]
                self._drawers.add(
                    documents=[d.text for d in chunk],
                    ids=[d.id for d in chunk],
                    metadatas=[{**d.metadata, SCOPE_KEY: d.scope} for d in chunk],
                    embeddings=matrix[start : start + len(chunk)].tolist(),
                )

    def _scopes_of(self, doc_ids: Sequence[str]) -> dict[str, str]:
        found = self._drawers.get(ids=list(doc_ids), include=["metadatas"])
        return {i: str((m or {}).get(SCOPE_KEY, "")) for i, m in zip(found["ids"], found["metadatas"] or [])}

    def delete(self, doc_ids: Sequence[str]) -> None:
        if doc_ids:
            with self._lock:
                self._drawers.delete(ids=list(doc_ids))

    def get(self, doc_ids: Sequence[str]) -> list[Document]:
        if not doc_ids:
            return []
        with self._lock:
            found = self._drawers.get(ids=list(doc_ids), include=["documents", "metadatas"])
        stored = {
            i: Document(i, text, None, *_split(meta))
            for i, text, meta in zip(found["ids"], found["documents"] or [], found["metadatas"] or [])
        }
        return [stored[i] for i in doc_ids if i in stored]

    def search(self, query: Query, *, k: int) -> list[SearchHit]:
        k = check_k(k)
        clauses = [] if query.where is None else [check_where(query.where)]
        if query.scope is not None:
            clauses.append({SCOPE_KEY: query.scope})
        where = None if not clauses else clauses[0] if len(clauses) == 1 else {"$and": clauses}
        with self._lock:
            if not self._drawers.count():
                return []
            found = self._drawers.query(
                query_embeddings=[vector_of(query).tolist()], n_results=k, where=where, include=["distances"]
            )
        return [SearchHit(i, 1.0 - float(d)) for i, d in zip(found["ids"][0], found["distances"][0])]

    def close(self) -> None:
        with self._lock:
            self._backend.close_palace(self._palace)
            self._backend.close()


def _split(metadata: Mapping[str, Any] | None) -> tuple[dict[str, Any], str]:
    """A drawer's metadata as the document's own and its scope."""
    own = dict(metadata or {})
    return own, str(own.pop(SCOPE_KEY, ""))
