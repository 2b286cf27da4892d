"""mem0 (the `mem0ai` package, 2.x; extra `mem0`) in retrieval mode: `add(..., infer=False)` stores each text as
it is (no LLM extracts facts), and `search` is mem0's own: its local Qdrant vector store under the run's folder,
mem0's score threshold (its lowest, 0) and its ranking. mem0's BM25 and entity boosts need `fastembed` and spaCy
models, which are downloaded on first use: not installed here, so mem0 ranks by similarity alone (as it says in a
warning).

Offline: `MEM0_TELEMETRY=False` (else it sends telemetry and fetches a notice), `MEM0_DIR` under the run's folder
(else it writes `~/.mem0` at import), both set before mem0 is imported; mem0 builds OpenAI clients at
construction even when none is called, so they get a placeholder key and a base URL on 127.0.0.1 (a stray call
stays on this machine and fails). Vectors: mem0's embedder is replaced by one that hands over the harness's
vectors (`SuppliedEmbedder`), so no model is loaded.

mem0 makes its own memory ids; the document's id is kept in its metadata (`ID_KEY`) and the adapter maps one to
the other. Scopes are mem0's: a document's scope is its `user_id`, and every memory carries the same `agent_id`
(`AGENT`), because mem0 refuses a search without one of `user_id` / `agent_id` / `run_id`: a search in every scope
filters on the agent. A `where` is translated into mem0's filter syntax (`eq`, `ne`, `in`, `nin`, `gt`, …, `AND`,
`OR`). An upsert deletes the stored memory and adds the new version (mem0's `update` would keep old metadata keys).
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import numpy as np

from harness.protocol import Document, Query, SearchHit, SystemContext, check_k, check_where, fold
from harness.systems.registry import missing_extra

from .vectors import refuse_other_scopes, unit_matrix, vector_of

os.environ["MEM0_TELEMETRY"] = "False"
os.environ.setdefault("MEM0_DIR", str(Path(tempfile.gettempdir()) / "magbench-mem0"))
try:
    from mem0 import Memory
    from mem0.embeddings.base import EmbeddingBase
except ModuleNotFoundError as error:
    raise missing_extra("mem0", "mem0", error) from None

ID_KEY = "magbench_id"
AGENT = "magbench"
UNSCOPED = "magbench-unscoped"
"""The `user_id` of documents with no scope (mem0 takes no empty id)."""
LOCAL_LLM = {"api_key": "placeholder-never-sent", "openai_base_url": "http://127.0.0.1:9/v1"}
RESERVED = frozenset({ID_KEY, "data", "hash", "created_at", "updated_at", "id", "text_lemmatized", "role"}) | {
    "user_id",
    "agent_id",
    "run_id",
    "actor_id",
    "attributed_to",
    "expiration_date",
}
"""Metadata keys mem0 keeps for itself (a document may not use them)."""


class SuppliedEmbedder(EmbeddingBase):
    """mem0's embedder interface over the vectors the harness supplies: each call takes the next one given (mem0
    trims a query before it embeds it, so a text cannot be the key). Every call into mem0 holds the adapter's lock
    and embeds exactly one text."""

    def __init__(self) -> None:
        super().__init__()
        self._next: deque[list[float]] = deque()

    def give(self, vector: np.ndarray) -> None:
        self._next.append(vector.astype(np.float32).tolist())

    def embed(self, text: Any, memory_action: Literal["add", "search", "update"] | None = None) -> list[float]:
        if not self._next:
            raise RuntimeError("mem0 asked for a vector it was not given")
        return self._next.popleft()

    @contextmanager
    def spent(self) -> Iterator[None]:
        """Around one call into mem0: afterwards every vector given was taken; an error of mem0's own propagates."""
        try:
            yield
        finally:
            left = len(self._next)
            self._next.clear()
        if left:
            raise RuntimeError(f"mem0 did not take {left} of the vectors it was given")


class Mem0Memory:
    name = "mem0"
    capabilities = frozenset({"vectors", "delete", "scopes", "filters", "update", "get"})

    def __init__(self, context: SystemContext) -> None:
        self._dim = context.vector_dim()
        self._lock = threading.RLock()
        self._given = SuppliedEmbedder()
        folder = context.workdir / "mem0"
        folder.mkdir(parents=True, exist_ok=True)
        self._memory = Memory.from_config(
            {
                "vector_store": {
                    "provider": "qdrant",
                    "config": {"collection_name": "magbench", "embedding_model_dims": self._dim, "path": str(folder)},
                },
                "embedder": {"provider": "openai", "config": {**LOCAL_LLM, "embedding_dims": self._dim}},
                "llm": {"provider": "openai", "config": LOCAL_LLM},
                "history_db_path": str(folder / "history.db"),
            }
        )
        self._memory.embedding_model = self._given
        self._memory_id: dict[str, str] = {}
        self._scope_of: dict[str, str] = {}

    def add(self, docs: Sequence[Document]) -> None:
        self.upsert(docs)

    def upsert(self, docs: Sequence[Document]) -> None:
        """Writes the documents, replacing those stored under their ids."""
        if not docs:
            return
        for doc in docs:
            reserved = RESERVED & set(doc.metadata)
            if reserved:
                raise ValueError(f"document {doc.id}: metadata keys {sorted(reserved)} are mem0's own")
            if doc.scope == UNSCOPED:
                raise ValueError(f"document {doc.id}: scope {UNSCOPED!r} is reserved for documents with no scope")
        matrix = unit_matrix(docs, self._dim)
        with self._lock:
            refuse_other_scopes(
                [(d.id, self._scope_of[d.id]) for d in docs if d.id in self._scope_of], {d.id: d.scope for d in docs}
            )
            self._forget([d.id for d in docs])
            for doc, vector in zip(docs, matrix):
                self._given.give(vector)
                with self._given.spent():
                    added = self._memory.add(
                        [{"role": "user", "content": doc.text}],
                        user_id=doc.scope or UNSCOPED,
                        agent_id=AGENT,
                        metadata={**doc.metadata, ID_KEY: doc.id},
                        infer=False,
                    )
                [memory] = added["results"]
                self._memory_id[doc.id] = str(memory["id"])
                self._scope_of[doc.id] = doc.scope

    def _forget(self, doc_ids: Sequence[str]) -> None:
        for doc_id in doc_ids:
            memory_id = self._memory_id.pop(doc_id, None)
            if memory_id is not None:
                self._memory.delete(memory_id)
                del self._scope_of[doc_id]

    def delete(self, doc_ids: Sequence[str]) -> None:
        with self._lock:
            self._forget(doc_ids)

    def get(self, doc_ids: Sequence[str]) -> list[Document]:
        found = []
        with self._lock:
            for doc_id in doc_ids:
                if doc_id in self._memory_id:
                    memory = self._memory.get(self._memory_id[doc_id])
                    if memory is not None:
                        metadata = {k: v for k, v in (memory.get("metadata") or {}).items() if k != ID_KEY}
                        found.append(Document(doc_id, str(memory["memory"]), None, metadata, self._scope_of[doc_id]))
        return found

    def search(self, query: Query, *, k: int) -> list[SearchHit]:
        k = check_k(k)
        filters: dict[str, Any] = {"agent_id": AGENT}
        if query.scope is not None:
            filters["user_id"] = query.scope or UNSCOPED
        if query.where is not None:
            filters["AND"] = [mem0_filter(query.where)]
        vector = vector_of(query).astype(np.float32)
        text = query.text.strip() or f"query {query.id}"  # mem0 refuses an empty query; the vector is given
        with self._lock:
            if not self._memory_id:
                return []
            self._given.give(vector / np.linalg.norm(vector))
            with self._given.spent():
                found = self._memory.search(text, top_k=k, filters=filters, threshold=0.0)
        return [
            SearchHit(str(hit["metadata"][ID_KEY]), float(hit["score"]))
            for hit in found["results"]
            if ID_KEY in (hit.get("metadata") or {})
        ]

    def close(self) -> None:
        with self._lock:
            self._memory.vector_store.client.close()
            self._memory.db.close()


def mem0_filter(where: Mapping[str, Any]) -> dict[str, Any]:
    """A `Query.where` in mem0's filter syntax."""

    def clause(key: str, operator: str, value: Any) -> dict[str, Any]:
        if key in RESERVED:
            raise ValueError(f"metadata key {key!r} is mem0's own")
        return {key: {operator.removeprefix("$"): value}}

    return fold(check_where(where), clause, lambda parts: {"AND": list(parts)}, lambda parts: {"OR": list(parts)})
