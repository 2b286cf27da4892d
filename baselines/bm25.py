"""BM25 alone, as users run it with `bm25s` (Lucene's variant, English stop words, no stemmer): the
lexical baseline dialogue-memory papers report beside dense retrieval. `bm25s` indexes are static: the
first search after documents were added or deleted re-indexes every live document, and that cost is
timed as it is."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.protocol import Document, Query, SearchHit, SystemContext, check_k

from .vectors import top_k


class BM25:
    name = "bm25"
    capabilities = frozenset({"text", "delete"})

    def __init__(self, context: SystemContext) -> None:
        self._index = LexicalRetriever()

    def add(self, docs: Sequence[Document]) -> None:
        self._index.add([(d.id, d.text) for d in docs])

    def delete(self, doc_ids: Sequence[str]) -> None:
        self._index.delete(doc_ids)

    def search(self, query: Query, *, k: int) -> list[SearchHit]:
        """The best k by BM25; documents sharing no word with the query fill up with score 0, in order."""
        k = check_k(k)
        ids, scores = self._index.scores(query.text)
        best = top_k(scores, min(k, len(ids)))
        return [SearchHit(ids[i], float(scores[i])) for i in best.tolist()]

    def close(self) -> None:
        self._index = LexicalRetriever()


class LexicalRetriever:
    """Documents by id, and a `bm25s` index over them rebuilt when a search finds it stale."""

    def __init__(self) -> None:
        import bm25s

        logging.getLogger("bm25s").setLevel(logging.WARNING)  # it logs every build
        self._bm25s = bm25s
        self._texts: dict[str, str] = {}
        self._built: tuple[list[str], Any] | None = None

    def add(self, docs: Sequence[tuple[str, str]]) -> None:
        self._texts.update(docs)
        self._built = None

    def delete(self, doc_ids: Sequence[str]) -> None:
        for doc_id in doc_ids:
            self._texts.pop(doc_id, None)
        self._built = None

    def scores(self, text: str) -> tuple[list[str], np.ndarray]:
        """Every live document's id and BM25 score for `text` (0 where it shares no word)."""
        if not self._texts:  # bm25s cannot index nothing
            return [], np.zeros(0)
        if self._built is None:
            ids = list(self._texts)
            retriever = self._bm25s.BM25()
            tokens = self._bm25s.tokenize(list(self._texts.values()), stopwords="en", show_progress=False)
            retriever.index(tokens, show_progress=False)
            self._built = (ids, retriever)
        ids, retriever = self._built
        [words] = self._bm25s.tokenize([text], stopwords="en", return_ids=False, show_progress=False)
        known = retriever.get_tokens_ids(words) if ids else []
        if not known:
            return ids, np.zeros(len(ids))
        return ids, np.asarray(retriever.get_scores(known), dtype=np.float64)
