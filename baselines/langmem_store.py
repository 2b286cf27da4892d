"""LangMem's retrieval path (extra `langmem`): LangGraph's `InMemoryStore` with a vector index, searched through
LangMem's own search tool (`create_search_memory_tool`), as an agent with LangMem's memory tools searches it.

A document is written as LangMem's manage tool writes a memory (`{"content": text}` under a namespace
`("memories", scope)`), with its metadata beside the content so that `get` can return it; the key is the
document's id (LangMem's tool would make a UUID). A search in one scope searches that namespace, a search in every
scope the `("memories",)` prefix. The store's embedding function hands over the harness's vectors
(`given.GivenVectors`), so no model is loaded. LangGraph's filters have no `$in` or `$or`, so no `filters`.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.protocol import Document, Query, SearchHit, SystemContext, check_k
from harness.systems.registry import missing_extra

from .given import GivenVectors
from .vectors import refuse_other_scopes, unit_matrix, vector_of

try:
    from langgraph.store.memory import InMemoryStore
    from langmem import create_search_memory_tool
except ModuleNotFoundError as error:
    raise missing_extra("langmem", "langmem", error) from None

ROOT = "memories"
"""The first part of every namespace (LangMem's examples' `("memories", "{langgraph_user_id}")`)."""
UNSCOPED = "magbench-unscoped"
"""The namespace label of documents with no scope (LangGraph takes no empty label)."""


class LangMemStore:
    name = "langmem"
    capabilities = frozenset({"vectors", "delete", "scopes", "update", "get"})

    def __init__(self, context: SystemContext) -> None:
        self._dim = context.vector_dim()
        self._lock = threading.RLock()
        self._given = GivenVectors()
        given = self._given

        def embed(texts: Sequence[str]) -> list[list[float]]:
            vectors: list[list[float]] = given.take(texts).tolist()
            return vectors

        self._store = InMemoryStore(index={"dims": self._dim, "embed": embed, "fields": ["content"]})
        self._tools: dict[tuple[str, ...], Any] = {}
        self._scope_of: dict[str, str] = {}

    def _tool(self, namespace: tuple[str, ...]) -> Any:
        """LangMem's search tool over one namespace (or a prefix of namespaces)."""
        if namespace not in self._tools:
            self._tools[namespace] = create_search_memory_tool(
                namespace=namespace, store=self._store, response_format="content_and_artifact"
            )
        return self._tools[namespace]

    def add(self, docs: Sequence[Document]) -> None:
        self.upsert(docs)

    def upsert(self, docs: Sequence[Document]) -> None:
        """Writes the documents, replacing those stored under their ids (a `put` under a stored key replaces it)."""
        if not docs:
            return
        matrix = unit_matrix(docs, self._dim)
        with self._lock:
            refuse_other_scopes(
                [(d.id, self._scope_of[d.id]) for d in docs if d.id in self._scope_of], {d.id: d.scope for d in docs}
            )
            if any(d.scope == UNSCOPED for d in docs):
                raise ValueError(f"scope {UNSCOPED!r} is reserved for documents with no scope")
            for doc, vector in zip(docs, matrix):
                self._given.give([doc.text], vector[None, :])
                with self._given.spent():
                    self._store.put(namespace(doc.scope), doc.id, {"content": doc.text, "metadata": dict(doc.metadata)})
                self._scope_of[doc.id] = doc.scope

    def delete(self, doc_ids: Sequence[str]) -> None:
        with self._lock:
            for doc_id in doc_ids:
                scope = self._scope_of.pop(doc_id, None)
                if scope is not None:
                    self._store.delete(namespace(scope), doc_id)

    def get(self, doc_ids: Sequence[str]) -> list[Document]:
        found = []
        with self._lock:
            for doc_id in doc_ids:
                if doc_id in self._scope_of:
                    item = self._store.get(namespace(self._scope_of[doc_id]), doc_id)
                    if item is not None:
                        value = item.value
                        found.append(
                            Document(doc_id, value["content"], None, value["metadata"], self._scope_of[doc_id])
                        )
        return found

    def search(self, query: Query, *, k: int) -> list[SearchHit]:
        k = check_k(k)
        searched = (ROOT,) if query.scope is None else namespace(query.scope)
        vector = vector_of(query).astype(np.float32)
        text = query.text or f"query {query.id}"  # LangGraph's store embeds no empty query: it would not rank at all
        with self._lock:
            self._given.give([text], (vector / np.linalg.norm(vector))[None, :])
            with self._given.spent():
                _, items = self._tool(searched).func(query=text, limit=k)
        return [SearchHit(str(item.key), float(item.score)) for item in items]

    def close(self) -> None:
        with self._lock:
            self._tools.clear()


def namespace(scope: str) -> tuple[str, str]:
    """A scope's namespace (LangGraph refuses an empty label or one with a period: such a scope is its error)."""
    return (ROOT, scope or UNSCOPED)
