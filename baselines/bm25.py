"""BM25 alone (`bm25s`: Lucene's variant, English stopwords, no stemmer): the lexical baseline
dialogue-memory papers report beside dense retrieval. The index is the engine's own lexical index
(`reference.lexical`), over every document."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.protocol import Document, Query, SearchHit, SystemContext
from reference.lexical import LexicalIndex
from reference.validation import check_k


class BM25:
    name = "bm25"
    capabilities = frozenset({"text"})

    def __init__(self, context: SystemContext) -> None:
        self._index = LexicalIndex()
        self._ids: list[str] = []

    def add(self, docs: Sequence[Document]) -> None:
        start = len(self._ids)
        self._index.add(np.arange(start, start + len(docs)), [d.text for d in docs])
        self._ids += [d.id for d in docs]

    def search(self, query: Query, *, k: int) -> list[SearchHit]:
        """The best k by BM25; documents sharing no word with the query fill up with score 0, in order."""
        k = check_k(k)
        rows, scores = self._index.search(query.text, k)
        matched = set(rows.tolist())
        rest = [r for r in range(len(self._ids)) if r not in matched][: k - len(rows)]
        pairs = [*zip(rows.tolist(), scores.tolist()), *((r, 0.0) for r in rest)]
        return [SearchHit(self._ids[r], float(s)) for r, s in pairs]

    def close(self) -> None:
        self._ids.clear()
