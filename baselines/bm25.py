"""BM25 (`bm25s`: Lucene's variant, English stopwords, no stemmer, as in its defaults): lexical
search over document texts, the baseline dialogue-memory papers report beside dense retrieval."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from harness.protocol import Document, Query, SearchHit, SystemContext
from reference.errors import BackendUnavailableError
from reference.index import top_k
from reference.validation import check_k


class LexicalIndex:
    """A `bm25s` index over texts, rebuilt on every add (bm25s indexes are static)."""

    def __init__(self, *, stopwords: str = "en") -> None:
        try:
            import bm25s
        except ImportError:
            raise BackendUnavailableError("bm25s is not installed; pip install 'magnetic-bench[lexical]'") from None
        logging.getLogger("bm25s").setLevel(logging.WARNING)  # it logs every index build at INFO
        self._bm25s = bm25s
        self.stopwords = stopwords
        self.texts: list[str] = []
        self._retriever = None

    def add(self, texts: Sequence[str]) -> None:
        self.texts += list(texts)
        tokens = self._bm25s.tokenize(self.texts, stopwords=self.stopwords, show_progress=False)
        self._retriever = self._bm25s.BM25()
        self._retriever.index(tokens, show_progress=False)

    def scores(self, query: str) -> np.ndarray:
        """The BM25 score of every document for `query` (0 where no query word occurs)."""
        [words] = self._bm25s.tokenize([query], stopwords=self.stopwords, return_ids=False, show_progress=False)
        if not words:  # only stopwords or punctuation: nothing matches
            return np.zeros(len(self.texts))
        return np.asarray(self._retriever.get_scores(words), dtype=np.float64)


class BM25:
    name = "bm25"
    capabilities = frozenset({"text"})

    def __init__(self, context: SystemContext, *, stopwords: str = "en") -> None:
        self._index = LexicalIndex(stopwords=stopwords)
        self._ids: list[str] = []

    def add(self, docs: Sequence[Document]) -> None:
        self._index.add([d.text for d in docs])
        self._ids += [d.id for d in docs]

    def search(self, query: Query, *, k: int) -> list[SearchHit]:
        k = check_k(k)
        scores = self._index.scores(query.text)
        return [SearchHit(self._ids[i], float(scores[i])) for i in top_k(scores, min(k, len(scores))).tolist()]

    def close(self) -> None:
        self._ids.clear()
