"""Any LangChain `VectorStore` as a system: `langchain:MODULE:CLASS` (extra `langchain`, and the store's own
package), e.g. `langchain:langchain_core.vectorstores:InMemoryVectorStore`.

The store is given an embedding model that hands it the harness's vectors (`GivenVectors`), so it is measured on
the same vectors as every other system; options are passed to its constructor. What it can do is read from the
class: `delete` and `get` where it overrides `VectorStore.delete` / `get_by_ids`; `filters` where its search takes
a `filter` (a callable over documents, as `InMemoryVectorStore`'s, or a dict in Chroma's `where` syntax, as
Chroma's and PGVector's: the annotation decides, `filter_style="callable" | "where" | "none"` overrides);
`scopes` (a metadata field, `SCOPE_KEY`, filtered on) with filters; `update` (adding under a stored id replaces
it, as LangChain's standard tests require) with `get`, which it needs to refuse an id another scope holds. A
hit's score is the store's relevance score where it defines one (higher is better), else its raw score, read as
a similarity (`scores="distance"` negates a distance).
"""

from __future__ import annotations

import importlib
import inspect
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from harness.protocol import Document, Query, SearchHit, SystemContext, check_k, check_where, fold, is_number
from harness.systems.registry import SystemSpecError, missing_extra

from .vectors import refuse_other_scopes, stack_unit, vector_of

try:
    from langchain_core.documents import Document as LangChainDocument
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import VectorStore
except ModuleNotFoundError as error:
    raise missing_extra("langchain:MODULE:CLASS", "langchain", error) from None

SCOPE_KEY = "magbench_scope"
EMBEDDING_PARAMETERS = ("embedding", "embeddings", "embedding_function")


def store_class(path: str) -> type[VectorStore]:
    """`MODULE:CLASS`, imported and checked to be a LangChain `VectorStore`."""
    module_name, colon, attribute = path.partition(":")
    if not colon or not module_name or not attribute:
        raise SystemSpecError(f"langchain:{path}: expected langchain:MODULE:CLASS, e.g. {EXAMPLE}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise SystemSpecError(
            f"langchain:{path}: cannot import {module_name!r} ({error}); install its package"
        ) from None
    found = getattr(module, attribute, None)
    if not (isinstance(found, type) and issubclass(found, VectorStore)):
        raise SystemSpecError(f"langchain:{path}: {module_name}.{attribute} is not a LangChain VectorStore class")
    return found


EXAMPLE = "langchain:langchain_core.vectorstores:InMemoryVectorStore"


class GivenVectors(Embeddings):
    """An embedding model that returns the vectors the harness gave for the texts the store is about to embed
    (per thread), and refuses any other text: a store never embeds with a model of its own."""

    def __init__(self) -> None:
        self._given = threading.local()

    def give(self, texts: Sequence[str], matrix: np.ndarray) -> None:
        self._given.texts, self._given.vectors = list(texts), matrix.tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        given_texts: list[str] = getattr(self._given, "texts", [])
        if list(texts) != given_texts[: len(texts)]:
            raise RuntimeError(f"the store embeds texts it was not given: {texts[:3]!r:.200}")
        vectors: list[list[float]] = self._given.vectors[: len(texts)]
        self._given.texts, self._given.vectors = given_texts[len(texts) :], self._given.vectors[len(texts) :]
        return vectors

    def embed_query(self, text: str) -> list[float]:
        [vector] = self.embed_documents([text])
        return vector


class LangChainStore:
    def __init__(
        self,
        cls: type[VectorStore],
        context: SystemContext,
        *,
        filter_style: str | None = None,
        scores: str = "similarity",
        **options: Any,
    ) -> None:
        if scores not in ("similarity", "distance"):
            raise ValueError(f"scores must be 'similarity' or 'distance', not {scores!r}")
        context.vector_dim()  # the store is given the harness's vectors: a run without them is refused here
        self.name = f"langchain:{cls.__name__}"
        self._embedding = GivenVectors()
        self._store = _construct(cls, self._embedding, options)
        self._filter_style = filter_style or _filter_style(cls)
        if self._filter_style not in ("callable", "where", "none"):
            raise ValueError(f"filter_style must be 'callable', 'where' or 'none', not {self._filter_style!r}")
        deletes = cls.delete is not VectorStore.delete
        gets = cls.get_by_ids is not VectorStore.get_by_ids
        filters = self._filter_style != "none"
        self.capabilities = frozenset(
            {"vectors"}
            | ({"delete"} if deletes else set())
            | ({"get", "update"} if gets else set())
            | ({"filters", "scopes"} if filters else set())
        )
        try:
            relevance: Callable[[float], float] | None = self._store._select_relevance_score_fn()
        except NotImplementedError:
            relevance = None
        self._score = relevance or ((lambda d: -d) if scores == "distance" else (lambda s: s))
        self._writing = threading.Lock()

    def add(self, docs: Sequence[Document]) -> None:
        self.upsert(docs)

    def upsert(self, docs: Sequence[Document]) -> None:
        """Adds the documents under their ids (a stored id is replaced, as LangChain's standard tests require)."""
        if not docs:
            return
        matrix = stack_unit(docs)
        scoped = "scopes" in self.capabilities
        with self._writing:
            if scoped and "get" in self.capabilities:
                scope_of = {d.id: d.scope for d in docs}
                held = self._store.get_by_ids(list(scope_of))
                refuse_other_scopes([(str(h.id), h.metadata.get(SCOPE_KEY)) for h in held], scope_of)
            self._embedding.give([d.text for d in docs], matrix)
            self._store.add_documents(
                [
                    LangChainDocument(
                        page_content=d.text, metadata={**d.metadata, SCOPE_KEY: d.scope} if scoped else dict(d.metadata)
                    )
                    for d in docs
                ],
                ids=[d.id for d in docs],
            )

    def delete(self, doc_ids: Sequence[str]) -> None:
        if doc_ids:
            self._store.delete(list(doc_ids))

    def get(self, doc_ids: Sequence[str]) -> list[Document]:
        found = {str(d.id): d for d in self._store.get_by_ids(list(doc_ids))}
        return [_document(found[i]) for i in doc_ids if i in found]

    def search(self, query: Query, *, k: int) -> list[SearchHit]:
        k = check_k(k)
        arguments: dict[str, Any] = {}
        if query.scope is not None or query.where is not None:
            arguments["filter"] = self._filter(query)
        vector = vector_of(query)
        self._embedding.give([query.text], vector[None, :] / np.linalg.norm(vector))
        found = self._store.similarity_search_with_score(query.text, k=k, **arguments)
        return [SearchHit(str(d.id), float(self._score(s))) for d, s in found]

    def close(self) -> None:
        """Closes the store where it can be closed (`VectorStore` itself has no `close`)."""
        close = getattr(self._store, "close", None)
        if callable(close):
            close()

    def _filter(self, query: Query) -> Any:
        where = dict(query.where) if query.where is not None else None
        if query.scope is not None:
            where = {SCOPE_KEY: query.scope} if where is None else {"$and": [{SCOPE_KEY: query.scope}, where]}
        assert where is not None
        if self._filter_style == "where":
            return check_where(where)
        matches = fold(check_where(where), _predicate, _all, _any)
        return lambda document: matches(document.metadata)


def _construct(cls: type[VectorStore], embedding: Embeddings, options: dict[str, Any]) -> VectorStore:
    """The store, given the embedding model under the name its constructor takes it by."""
    parameters = inspect.signature(cls).parameters
    name = next((p for p in EMBEDDING_PARAMETERS if p in parameters), None)
    if name is None:
        raise SystemSpecError(
            f"{cls.__module__}.{cls.__name__} takes no embedding model in its constructor "
            f"(none of {', '.join(EMBEDDING_PARAMETERS)}); wrap it in a factory of your own"
        )
    return cls(**{name: embedding}, **options)


def _filter_style(cls: type[VectorStore]) -> str:
    """How the store's search takes a filter, read from the `filter` parameter's annotation."""
    for method in ("similarity_search_with_score_by_vector", "similarity_search_with_score", "similarity_search"):
        parameter = inspect.signature(getattr(cls, method)).parameters.get("filter")
        if parameter is not None:
            annotation = str(parameter.annotation)
            if "Callable" in annotation:
                return "callable"
            if "dict" in annotation.lower():
                return "where"
    return "none"


def _predicate(key: str, operator: str, value: Any) -> Callable[[dict[str, Any]], bool]:
    """One condition over a document's metadata (a key missing matches no condition, as in Chroma)."""

    def same(held: Any, wanted: Any) -> bool:
        return held == wanted and isinstance(held, bool) == isinstance(wanted, bool)

    if operator in ("$eq", "$in", "$ne", "$nin"):
        values = value if operator in ("$in", "$nin") else [value]
        wanted = operator in ("$eq", "$in")
        return lambda m: key in m and any(same(m[key], v) for v in values) == wanted
    if not is_number(value):
        raise ValueError(f"{key}: {operator} compares numbers, got {value!r:.50}")
    compare: Callable[[float], bool] = {
        "$gt": lambda held: held > value,
        "$gte": lambda held: held >= value,
        "$lt": lambda held: held < value,
        "$lte": lambda held: held <= value,
    }[operator]
    return lambda m: is_number(m.get(key)) and compare(m[key])


def _all(parts: Sequence[Callable[[dict[str, Any]], bool]]) -> Callable[[dict[str, Any]], bool]:
    return lambda m: all(p(m) for p in parts)


def _any(parts: Sequence[Callable[[dict[str, Any]], bool]]) -> Callable[[dict[str, Any]], bool]:
    return lambda m: any(p(m) for p in parts)


def _document(found: LangChainDocument) -> Document:
    metadata = dict(found.metadata)
    scope = metadata.pop(SCOPE_KEY, "")
    return Document(str(found.id), found.page_content, None, metadata, str(scope))
