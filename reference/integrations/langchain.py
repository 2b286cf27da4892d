"""`CellularVectorStore`: the engine as a LangChain `VectorStore` (extra `langchain`: `langchain-core`).

Agents built on LangChain or LangGraph use it as they use Chroma's integration:

    store = CellularVectorStore(embedding=embeddings, path="memory")   # path=None: in memory
    store.add_documents(documents, scope="user:alice")
    store.similarity_search("where does Alice live?", k=4, scope="user:alice", filter={"source": "chat"})

- Documents added under ids the store holds replace them (an upsert, as the standard suite expects), within their
  scope: an id held in another scope is refused (`InvalidInputError`), never replaced.
- Deleting ids it does not hold is no error, nor is deleting with `scope=` ids another scope holds (they stay,
  answered as unknown ids are).
- `max_marginal_relevance_search` diversifies the best `fetch_k` with LangChain's own MMR over the stored vectors.
- Keyword arguments reach the engine: `scope=` (whose memory: a user, an agent, a run) for adds, searches and
  deletes, `filter=` (Chroma's `where` syntax over metadata), `since=` / `until=` (timestamps) for searches,
  `episode=` for adds; other keyword arguments of the constructor are `MemoryConfig` fields.
- The memory is opened on the first call that has an embedding in hand (its dimension comes from the embedding
  model); `close()` releases it.
- Relevance scores are the engine's scores: a cosine for vector searches, a fused score in [0, 1] for text
  searches.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore
from langchain_core.vectorstores.utils import maximal_marginal_relevance

from ..cells.table import new_ids
from ..common.config import MemoryConfig
from ..common.errors import InvalidInputError
from ..common.validation import check_result_count
from ..memory import CellularMemory
from ..search.hit import Hit


class EmbeddingsEncoder:
    """A LangChain embedding model as the engine's encoder (documents embedded as documents)."""

    def __init__(self, embedding: Embeddings, dim: int) -> None:
        self.embedding, self.dim = embedding, dim
        model = getattr(embedding, "model", None) or getattr(embedding, "model_name", None)
        self.name = f"langchain:{type(embedding).__name__}" + (f":{model}" if isinstance(model, str) else "")

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self.embedding.embed_documents(list(texts)), dtype=np.float32)


class CellularVectorStore(VectorStore):
    """A `CellularMemory` behind LangChain's `VectorStore` interface, sync and async."""

    def __init__(self, embedding: Embeddings, path: str | None = None, **options: Any) -> None:
        self._embedding, self._path = embedding, path
        self._config = MemoryConfig(**options)
        self._memory: CellularMemory | None = None
        self._opening = threading.Lock()

    @property
    def embeddings(self) -> Embeddings:
        return self._embedding

    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        scope: str | Sequence[str] = "",
        episode: str | Sequence[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Embed and store texts; a text under an id the store holds replaces it; a text without an id (None,
        as `add_documents` passes for a document without one) gets a new one. Returns the ids."""
        _no_other(kwargs)
        texts = list(texts)
        if not texts:
            return []
        given: list[str | None] = [*_id_list(ids)] if ids is not None else [None] * len(texts)
        if len(given) != len(texts):
            raise InvalidInputError(f"{len(given)} ids for {len(texts)} texts")
        fresh = iter(new_ids(sum(i is None for i in given)))
        chosen = [i if i is not None else next(fresh) for i in given]
        vectors = self._embedding.embed_documents(texts)
        memory = self._open(len(vectors[0]))
        metadata = None if metadatas is None else _metadatas(metadatas, len(texts))
        return memory.add(
            texts, vectors=vectors, metadata=metadata, ids=chosen, scope=scope, episode=episode, upsert=True
        )

    def delete(self, ids: list[str] | None = None, *, scope: str | None = None, **kwargs: Any) -> bool | None:
        """Delete these ids (ids the store does not hold are skipped, and with `scope` so are ids another scope
        holds: they are answered as unknown ones are); with no ids, every document (of `scope`, when given).
        Returns True."""
        _no_other(kwargs)
        memory = self._existing()
        if memory is None:
            return True
        if ids is None:
            wanted = memory.ids(scope=scope)
        else:
            asked = list(dict.fromkeys(_id_list(ids)))
            held = memory.get_many(asked) if asked else []
            wanted = [record.id for record in held if scope is None or record.scope == scope]
        if wanted:
            memory.delete(wanted, scope=scope)
        return True

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """The stored documents of these ids, in the order asked; ids not stored are skipped."""
        ids = _id_list(ids)
        memory = self._existing()
        if memory is None or not ids:
            return []
        return [Document(page_content=r.text, metadata=r.metadata, id=r.id) for r in memory.get_many(list(ids))]

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        return [document for document, _ in self.similarity_search_with_score(query, k, **kwargs)]

    def similarity_search_with_score(self, query: str, k: int = 4, **kwargs: Any) -> list[tuple[Document, float]]:
        """The best k documents for a text (hybrid: its embedding and its words) with their scores."""
        vector = self._embedding.embed_query(query)
        return self._search(query, vector, k, **kwargs)

    def similarity_search_by_vector(self, embedding: list[float], k: int = 4, **kwargs: Any) -> list[Document]:
        return [document for document, _ in self._search(None, embedding, k, **kwargs)]

    def max_marginal_relevance_search(
        self, query: str, k: int = 4, fetch_k: int = 20, lambda_mult: float = 0.5, **kwargs: Any
    ) -> list[Document]:
        """k documents relevant to a text and unlike each other: the best `fetch_k` (hybrid: its embedding and its
        words), then chosen by maximal marginal relevance over their vectors (`lambda_mult` 1: relevance only,
        0: diversity only). The async version is LangChain's, on a worker thread."""
        vector = self._embedding.embed_query(query)
        return self._diverse(query, vector, k, fetch_k, lambda_mult, **kwargs)

    def max_marginal_relevance_search_by_vector(
        self, embedding: list[float], k: int = 4, fetch_k: int = 20, lambda_mult: float = 0.5, **kwargs: Any
    ) -> list[Document]:
        """`max_marginal_relevance_search` for an embedding."""
        return self._diverse(None, embedding, k, fetch_k, lambda_mult, **kwargs)

    def _diverse(
        self, query: str | None, vector: Sequence[float], k: int, fetch_k: int, lambda_mult: float, **kwargs: Any
    ) -> list[Document]:
        """LangChain's `maximal_marginal_relevance` over the stored vectors of the best `fetch_k` documents."""
        check_result_count(k)
        if isinstance(fetch_k, bool) or not isinstance(fetch_k, int) or fetch_k < 1:
            raise InvalidInputError(f"fetch_k must be a positive integer, got {fetch_k!r}")
        if isinstance(lambda_mult, bool) or not isinstance(lambda_mult, int | float) or not 0 <= lambda_mult <= 1:
            raise InvalidInputError(f"lambda_mult must be a number in [0, 1], got {lambda_mult!r}")
        fetched = [document for document, _ in self._search(query, vector, max(k, fetch_k), **kwargs)]
        memory = self._open(len(vector))
        vectors = {record.id: record.vector for record in memory.get_many([str(d.id) for d in fetched])}
        fetched = [document for document in fetched if document.id in vectors]  # one deleted meanwhile is skipped
        chosen = maximal_marginal_relevance(
            np.asarray(vector, dtype=np.float32),
            [vectors[str(d.id)].tolist() for d in fetched],
            lambda_mult=lambda_mult,
            k=k,
        )
        return [fetched[i] for i in chosen]

    def _search(
        self,
        query: str | None,
        vector: Sequence[float],
        k: int,
        *,
        scope: str | None = None,
        filter: dict[str, Any] | None = None,
        since: float | None = None,
        until: float | None = None,
        **kwargs: Any,
    ) -> list[tuple[Document, float]]:
        _no_other(kwargs)
        memory = self._open(len(vector))
        within: dict[str, Any] = {"scope": scope, "where": filter, "since": since, "until": until}
        hits = (
            memory.search(vector, k=k, **within)
            if query is None
            else memory.search(query, k=k, vector=vector, **within)
        )
        return [(_document(hit), hit.score) for hit in hits]

    def _select_relevance_score_fn(self) -> Any:
        return lambda score: score

    @classmethod
    def from_texts(
        cls,
        texts: list[str],
        embedding: Embeddings,
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        path: str | None = None,
        **options: Any,
    ) -> CellularVectorStore:
        store = cls(embedding=embedding, path=path, **options)
        store.add_texts(texts, metadatas, ids=ids)
        return store

    def close(self) -> None:
        """Close the memory (persisting what it gathered); a later call opens it again."""
        with self._opening:
            if self._memory is not None:
                self._memory.close()
                self._memory = None

    def _open(self, dim: int) -> CellularMemory:
        """The memory, opened for embeddings of `dim` on first use."""
        with self._opening:
            if self._memory is None:
                encoder = EmbeddingsEncoder(self._embedding, dim)
                self._memory = CellularMemory(path=self._path, encoder=encoder, config=self._config)
            return self._memory

    def _existing(self) -> CellularMemory | None:
        """The memory if it holds anything: opened here for a stored one, None for a new one not yet used."""
        if self._memory is None and self._path is not None:
            return self._open(len(self._embedding.embed_query("dimension")))
        return self._memory


def _document(hit: Hit) -> Document:
    return Document(page_content=hit.text, metadata=hit.metadata, id=hit.id)


def _no_other(kwargs: dict[str, Any]) -> None:
    if kwargs:
        raise InvalidInputError(f"unknown arguments {sorted(kwargs)}; see reference.integrations.langchain")


def _id_list(ids: Any) -> list[str]:
    """A list of ids; a single string is refused (iterated, "ab" would name the ids "a" and "b")."""
    if isinstance(ids, str | bytes) or not isinstance(ids, Iterable):
        raise InvalidInputError(f"ids must be a list of strings, got {type(ids).__name__}: pass [id] for one id")
    return list(ids)


def _metadatas(metadatas: Any, count: int) -> list[dict[str, Any]]:
    """One metadata mapping per text (the engine checks and copies what is in them)."""
    if not isinstance(metadatas, Sequence) or isinstance(metadatas, str | bytes | Mapping):
        raise InvalidInputError(f"metadatas must be a list with one mapping per text, got {type(metadatas).__name__}")
    if len(metadatas) != count:
        raise InvalidInputError(f"{len(metadatas)} metadatas for {count} texts")
    for position, metadata in enumerate(metadatas):
        if not isinstance(metadata, Mapping):
            raise InvalidInputError(f"metadatas[{position}] must be a mapping, got {type(metadata).__name__}")
    return list(metadatas)
