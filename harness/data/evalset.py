"""An evaluation set: documents, queries and relevance judgements (BEIR's shape, in memory)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from harness.protocol import Document, Query


@dataclass(frozen=True)
class Conversation:
    """What a dialogue set knows beyond its qrels: each turn's session and each question's category; for a
    question about a fact that changed, the turns that stated each version of it, oldest first (the last is
    current), and when the questions are asked (epoch seconds; None: unknown)."""

    session_of: Mapping[str, str]
    category: Mapping[str, str]
    versions: Mapping[str, tuple[tuple[str, ...], ...]] = field(default_factory=dict)
    asked_at: float | None = None


@dataclass(frozen=True)
class EvalSet:
    """`qrels[query_id][doc_id]` is a relevance grade (> 0 is relevant); `labels` are true topics (named by
    `topics`); a dialogue set also has its `conversation`."""

    name: str
    docs: list[Document]
    queries: list[Query]
    qrels: Mapping[str, Mapping[str, float]]
    labels: np.ndarray | None = None
    topics: tuple[str, ...] = ()
    conversation: Conversation | None = None

    def relevant(self) -> list[list[str]]:
        """Relevant doc ids per query, in query order."""
        return [[d for d, grade in self.qrels.get(q.id, {}).items() if grade > 0] for q in self.queries]

    def with_vectors(self, doc_vectors: np.ndarray, query_vectors: np.ndarray) -> EvalSet:
        docs = [replace(d, vector=v) for d, v in zip(self.docs, doc_vectors)]
        queries = [replace(q, vector=v) for q, v in zip(self.queries, query_vectors)]
        return replace(self, docs=docs, queries=queries)
