"""txtai's embeddings index (extra `txtai`): dense (`txtai`), or hybrid BM25 + dense (`txtai-hybrid`, txtai's
`hybrid=True`: its BM25 scoring index beside the dense one, scores combined by txtai).

txtai embeds texts through a vectors model; here its `external` method with a transform that hands it the
harness's vectors for the texts being indexed or searched (`given.GivenVectors`), so it is measured on the same vectors
as every other system and loads no model. Documents are stored as content (txtai's SQLite store) with their
metadata as fields; a scope is a field (`SCOPE_KEY`) and a `where` becomes txtai's SQL over the fields, so the
filtering is txtai's own (applied to its candidate pool, as txtai does).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from harness.protocol import Document, Query, SearchHit, SystemContext, check_k, check_where, fold
from harness.systems.registry import missing_extra

from .given import GivenVectors
from .vectors import refuse_other_scopes, unit_matrix, vector_of

try:
    from txtai import Embeddings
except ModuleNotFoundError as error:
    raise missing_extra("txtai", "txtai", error) from None

SCOPE_KEY = "magbench_scope"


class TxtaiIndex:
    capabilities = frozenset({"vectors", "delete", "scopes", "filters", "update"})

    def __init__(self, context: SystemContext, *, hybrid: bool = False) -> None:
        self.name = "txtai-hybrid" if hybrid else "txtai"
        self._dim = context.vector_dim()
        self._lock = threading.RLock()
        self._given = GivenVectors()
        config: dict[str, Any] = {"method": "external", "transform": self._transform, "content": True}
        self._embeddings = Embeddings(config | ({"hybrid": True} if hybrid else {}))
        self._scope_of: dict[str, str] = {}

    @property
    def _transform(self) -> Callable[[list[str]], np.ndarray]:
        """txtai's transform: a plain function (txtai calls any other callable to build one)."""
        given = self._given

        def vectors_of(texts: list[str]) -> np.ndarray:
            return given.take(texts)

        return vectors_of

    def add(self, docs: Sequence[Document]) -> None:
        self.upsert(docs)

    def upsert(self, docs: Sequence[Document]) -> None:
        """Writes the documents, replacing those stored under their ids (txtai's upsert)."""
        if not docs:
            return
        for doc in docs:
            if SCOPE_KEY in doc.metadata or "text" in doc.metadata or "id" in doc.metadata:
                raise ValueError(f"document {doc.id}: metadata keys {SCOPE_KEY!r}, 'id' and 'text' are reserved")
        matrix = unit_matrix(docs, self._dim)
        with self._lock:
            refuse_other_scopes(
                [(d.id, self._scope_of[d.id]) for d in docs if d.id in self._scope_of], {d.id: d.scope for d in docs}
            )
            self._given.give([d.text for d in docs], matrix)
            with self._given.spent():
                self._embeddings.upsert(
                    [(d.id, {"text": d.text, **d.metadata, SCOPE_KEY: d.scope}, None) for d in docs]
                )
            self._scope_of.update((d.id, d.scope) for d in docs)

    def delete(self, doc_ids: Sequence[str]) -> None:
        with self._lock:
            stored = [i for i in doc_ids if i in self._scope_of]
            if stored:
                self._embeddings.delete(stored)
            for doc_id in stored:
                del self._scope_of[doc_id]

    def search(self, query: Query, *, k: int) -> list[SearchHit]:
        k = check_k(k)
        clauses, parameters = [], {"query": query.text}
        if query.scope is not None:
            clauses.append(f"[{SCOPE_KEY}] = :scope")
            parameters["scope"] = query.scope
        if query.where is not None:
            clauses.append(_sql(query.where, parameters))
        sql = " and ".join(["similar(:query)", *clauses])
        vector = vector_of(query)[None, :].astype(np.float32)
        with self._lock:
            if not self._scope_of:
                return []
            self._given.give([query.text], vector / np.linalg.norm(vector))
            with self._given.spent():
                found = self._embeddings.search(f"select id, score from txtai where {sql}", k, parameters=parameters)
        return [SearchHit(str(hit["id"]), float(hit["score"])) for hit in found]

    def close(self) -> None:
        with self._lock:
            self._embeddings.close()


def _sql(where: Any, parameters: dict[str, Any]) -> str:
    """A `Query.where` as txtai's SQL over the document's fields, its values bound as parameters."""

    def clause(key: str, operator: str, value: Any) -> str:
        if "]" in key:
            raise ValueError(f"metadata key {key!r}: a txtai field name cannot hold ']'")
        values = value if operator in ("$in", "$nin") else [value]
        names = []
        for item in values:
            name = f"p{len(parameters)}"
            parameters[name] = item
            names.append(f":{name}")
        sql = {"$eq": "=", "$ne": "!=", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
        if operator in sql:
            return f"[{key}] {sql[operator]} {names[0]}"
        return f"[{key}] {'in' if operator == '$in' else 'not in'} ({', '.join(names)})"

    return fold(
        check_where(where), clause, lambda parts: f"({' and '.join(parts)})", lambda parts: f"({' or '.join(parts)})"
    )
