"""The lexical index: BM25 over cell texts (`bm25s`: Lucene's BM25, English stopwords, no stemmer).

Cells are addressed by table row, like the group and entity indexes, and the index is derived from
the cells (rebuilt on open, so a crash cannot leave it inconsistent). `bm25s` indexes are static:
writes only mark the index stale, and the first text search after them tokenizes the new cells
(once; tokens are kept) and rebuilds the index, about 2.5 s per 100,000 cells here. Ingest pays
nothing; a workload that alternates single writes and text searches on a large memory pays a
rebuild per search (set `MemoryConfig.lexical=False` for it, or search with vectors).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from .index import top_k

STOPWORDS = "en"


class LexicalIndex:
    """Row-addressed BM25 over texts, rebuilt lazily after writes (thread-safe for concurrent searches)."""

    def __init__(self) -> None:
        import bm25s

        logging.getLogger("bm25s").setLevel(logging.WARNING)  # it logs every build at INFO
        self._bm25s = bm25s
        self._texts: dict[int, str] = {}
        self._tokens: dict[int, list[str]] = {}
        self._built: tuple[np.ndarray, Any] | None = None
        self._lock = threading.Lock()
        self.builds = 0

    def __len__(self) -> int:
        return len(self._texts)

    def add(self, rows: np.ndarray, texts: Sequence[str]) -> None:
        self._texts.update(zip(rows.tolist(), texts))
        self._built = None

    def remove(self, rows: np.ndarray) -> None:
        for row in rows.tolist():
            self._texts.pop(row, None)
            self._tokens.pop(row, None)
        self._built = None

    def rows(self) -> set[int]:
        return set(self._texts)

    def search(self, text: str, depth: int) -> tuple[np.ndarray, np.ndarray]:
        """The best `depth` rows sharing a word with `text`, by BM25 score (best first)."""
        rows, retriever = self._index()
        [words] = self._bm25s.tokenize([text], stopwords=STOPWORDS, return_ids=False, show_progress=False)
        if not words or not len(rows):
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        scores = np.asarray(retriever.get_scores(words), dtype=np.float64)
        best = top_k(scores, min(depth, len(scores)))
        best = best[scores[best] > 0]
        return rows[best], scores[best]

    def _index(self) -> tuple[np.ndarray, Any]:
        with self._lock:
            if self._built is None:
                new = [row for row in self._texts if row not in self._tokens]
                if new:
                    tokens = self._bm25s.tokenize(
                        [self._texts[r] for r in new], stopwords=STOPWORDS, return_ids=False, show_progress=False
                    )
                    self._tokens.update(zip(new, tokens))
                rows = np.fromiter(self._texts, dtype=np.int64, count=len(self._texts))
                retriever = self._bm25s.BM25()
                if len(rows):
                    retriever.index([self._tokens[r] for r in rows.tolist()], show_progress=False)
                self._built = (rows, retriever)
                self.builds += 1
            return self._built
