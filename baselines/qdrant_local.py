"""Qdrant in local mode (`qdrant-client` without a server; extra `qdrant`): in memory, or on disk with
`persist=True` (the context's work directory; local mode commits each point's write to SQLite on its own).

Each document is a point whose id is derived from the document's id (a UUID 5), with the id, text, scope and
metadata in its payload; cosine distance. A scope is a payload field, and a search in it a `must` condition, as
Qdrant's multitenancy guide keeps tenants in one collection; a `where` becomes a Qdrant `Filter`. Ids are unique
across scopes: a write of an id that another scope holds is refused (`ValueError`) and writes nothing. Local mode
searches exactly and is not thread-safe, so every call into the client holds one lock.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Sequence
from typing import Any

from harness.protocol import Document, Query, SearchHit, SystemContext, check_k, check_where, fold, is_number
from harness.systems.registry import missing_extra

from .vectors import refuse_other_scopes, stack_unit, vector_of

try:
    from qdrant_client import QdrantClient, models
except ModuleNotFoundError as error:
    raise missing_extra("qdrant-local", "qdrant", error) from None

COLLECTION = "documents"
BATCH = 1024
"""Points per upsert call."""


class QdrantLocal:
    capabilities: frozenset[str]

    def __init__(self, context: SystemContext, *, persist: bool = False) -> None:
        self.name = "qdrant-local"
        self.capabilities = frozenset({"vectors", "delete", "scopes", "filters", "update", "get"}) | (
            {"persist"} if persist else set()
        )
        self._lock = threading.RLock()
        self._client = QdrantClient(path=str(context.workdir / "qdrant")) if persist else QdrantClient(":memory:")
        if not self._client.collection_exists(COLLECTION):
            self._client.create_collection(
                COLLECTION,
                vectors_config=models.VectorParams(size=context.vector_dim(), distance=models.Distance.COSINE),
            )

    def add(self, docs: Sequence[Document]) -> None:
        self.upsert(docs)

    def upsert(self, docs: Sequence[Document]) -> None:
        """Writes the documents, replacing those stored under their ids (a point's write is an upsert)."""
        if not docs:
            return
        matrix = stack_unit(docs)
        with self._lock:
            self._refuse_other_scopes(docs)
            for start in range(0, len(docs), BATCH):
                chunk = docs[start : start + BATCH]
                self._client.upsert(
                    COLLECTION,
                    points=models.Batch(
                        ids=[point_id(d.id) for d in chunk],
                        vectors=matrix[start : start + len(chunk)].tolist(),
                        payloads=[
                            {"id": d.id, "text": d.text, "scope": d.scope, "metadata": dict(d.metadata)} for d in chunk
                        ],
                    ),
                )

    def _refuse_other_scopes(self, docs: Sequence[Document]) -> None:
        scope_of = {d.id: d.scope for d in docs}
        held = self._client.retrieve(COLLECTION, ids=[point_id(i) for i in scope_of], with_payload=["id", "scope"])
        refuse_other_scopes([(p.payload["id"], p.payload["scope"]) for p in held if p.payload], scope_of)

    def delete(self, doc_ids: Sequence[str]) -> None:
        with self._lock:
            self._client.delete(COLLECTION, points_selector=models.PointIdsList(points=[point_id(i) for i in doc_ids]))

    def get(self, doc_ids: Sequence[str]) -> list[Document]:
        with self._lock:
            held = self._client.retrieve(COLLECTION, ids=[point_id(i) for i in doc_ids], with_payload=True)
        payload_of = {p.payload["id"]: p.payload for p in held if p.payload}
        return [
            Document(i, payload_of[i]["text"], None, payload_of[i]["metadata"], payload_of[i]["scope"])
            for i in doc_ids
            if i in payload_of
        ]

    def search(self, query: Query, *, k: int) -> list[SearchHit]:
        k = check_k(k)
        conditions: list[models.Condition] = [] if query.scope is None else [field_is("scope", query.scope)]
        if query.where is not None:
            conditions.append(where_filter(query.where))
        with self._lock:
            found = self._client.query_points(
                COLLECTION,
                query=vector_of(query).tolist(),
                limit=k,
                query_filter=models.Filter(must=conditions) if conditions else None,
                with_payload=["id"],
            )
        return [SearchHit(p.payload["id"], float(p.score)) for p in found.points if p.payload]

    def close(self) -> None:
        with self._lock:
            self._client.close()


def point_id(doc_id: str) -> str:
    """A document's point id: Qdrant takes unsigned integers or UUIDs."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"magbench:{doc_id}"))


def field_is(key: str, value: Any) -> models.FieldCondition:
    """Equality on one payload field: a number as a one-point range (so that 2 is 2.0), a string or a boolean
    as a match."""
    if is_number(value):
        return models.FieldCondition(key=key, range=models.Range(gte=value, lte=value))
    return models.FieldCondition(key=key, match=models.MatchValue(value=value))


def where_filter(where: Any) -> models.Filter:
    """A `Query.where` as a Qdrant filter over the payload's metadata."""
    return fold(
        check_where(where),
        _clause,
        lambda parts: models.Filter(must=list(parts)),
        lambda parts: models.Filter(should=list(parts)),
    )


def _clause(key: str, operator: str, value: Any) -> models.Filter:
    if '"' in key:
        raise ValueError(f"metadata key {key!r}: a Qdrant payload path cannot hold a double quote")
    path = f'metadata."{key}"'
    if operator in ("$eq", "$in"):
        values = value if operator == "$in" else [value]
        return models.Filter(should=[field_is(path, v) for v in values])
    if operator in ("$ne", "$nin"):  # the key present, with another value (as Chroma's `$ne`)
        values = value if operator == "$nin" else [value]
        return models.Filter(
            must_not=[
                models.IsEmptyCondition(is_empty=models.PayloadField(key=path)),
                *(field_is(path, v) for v in values),
            ]
        )
    if not is_number(value):
        raise ValueError(f"{key}: {operator} compares numbers, got {value!r:.50}")
    return models.Filter(must=models.FieldCondition(key=path, range=models.Range(**{operator[1:]: value})))
