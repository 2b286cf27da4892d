"""The lexical index: BM25 over cell texts, kept current by every write and delete.

Scoring is Lucene's BM25 as `bm25s` computes it: words of two or more letters, lower-cased, Lucene's
English stop words removed, no stemmer; idf = ln(1 + (N − df + 0.5) / (df + 0.5)), term weight
tf / (tf + k1 · (1 − b + b · length / average length)), k1 1.5, b 0.75, a word repeated in the query
counted each time. N, df and the average length are those of the live cells at the moment of the query,
so a delete changes scores exactly as rebuilding the index without the cell would.

Layout (Lucene's segment model): each write appends an immutable segment of postings (for each word,
the rows that hold it and how often) built from the write's cells alone, and segments of similar size
are merged as they accumulate (the last two whenever the newer holds at least half as many postings as
the older: at most log2 of the postings segments, each posting merged O(log N) times). A delete marks
its rows dead (the postings stay until their segment is merged or is more than half dead, then
rewritten) and takes the rows' words out of the document frequencies. A query reads only the postings
of its words, in every segment, in one compiled pass each (`kernels.bm25_into`). Cells are addressed
by table row, like the group and entity indexes; the index is derived from the cells and rebuilt on open.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np

from . import kernels
from .cells import with_room

STOP_WORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there these they "
    "this to was will with".split()
)
"""Lucene's English stop set (`EnglishAnalyzer`), the list `bm25s` removes with stopwords="en"."""
WORD = re.compile(r"(?u)\b\w\w+\b")
K1 = 1.5
B = 0.75


def words(text: str) -> list[str]:
    """The indexed words of a text, in order (repeats kept)."""
    return [word for word in WORD.findall(text.lower()) if word not in STOP_WORDS]


class _Vocabulary(dict[str, int]):
    """Word → term id; looking up a new word gives it the next id."""

    def __missing__(self, word: str) -> int:
        term = self[word] = len(self)
        return term


@dataclass(frozen=True)
class _Segment:
    """Postings of consecutive rows `first_row` .. `end_row` − 1, grouped by word: word `terms[i]` is held by
    `rows[offsets[i]:offsets[i + 1]]`, `counts` times each."""

    first_row: int
    end_row: int
    terms: np.ndarray
    offsets: np.ndarray
    rows: np.ndarray
    counts: np.ndarray

    @property
    def postings(self) -> int:
        return len(self.rows)


class LexicalIndex:
    """Row-addressed BM25 over texts; writes and deletes cost in proportion to their own cells.
    Change it under the engine's write lock; searches may run at once from several threads."""

    def __init__(self) -> None:
        self._term_of = _Vocabulary()
        self._df = np.zeros(0, dtype=np.int64)
        self._length = np.zeros(0, dtype=np.int32)
        self._live = np.zeros(0, dtype=bool)
        self._docs = 0
        self._total_length = 0
        self._segments: list[_Segment] = []
        self._scratch = threading.local()

    def __len__(self) -> int:
        return self._docs

    def rows(self) -> set[int]:
        return set(np.flatnonzero(self._live).tolist())

    def segments(self) -> int:
        """How many segments a query reads (O(log N))."""
        return len(self._segments)

    def add(self, rows: np.ndarray, texts: Sequence[str]) -> None:
        """Index rows with their texts; `rows` ascend, each above every row indexed before."""
        if not len(rows):
            return
        end = int(rows[-1]) + 1
        if (self._segments and int(rows[0]) < self._segments[-1].end_row) or (np.diff(rows) <= 0).any():
            raise ValueError("the lexical index takes new rows in ascending order")
        found = [words(text) for text in texts]
        lengths = np.fromiter(map(len, found), dtype=np.int64, count=len(found))
        terms = np.fromiter(map(self._term_of.__getitem__, chain.from_iterable(found)), dtype=np.int64)
        self._length, self._live = with_room(self._length, end), with_room(self._live, end)
        self._length[rows] = lengths
        self._live[rows] = True
        self._docs += len(rows)
        self._total_length += int(lengths.sum())
        segment = _build(rows, terms, lengths)
        self._df = with_room(self._df, len(self._term_of))
        self._df[segment.terms] += np.diff(segment.offsets)  # a segment lists each of its words once
        self._segments.append(segment)
        while len(self._segments) > 1 and 2 * self._segments[-1].postings >= self._segments[-2].postings:
            newer = self._segments.pop()
            self._segments[-1] = self._merged(self._segments[-1], newer)

    def remove(self, rows: np.ndarray, texts: Sequence[str]) -> None:
        """Take rows out (their `texts` as indexed, to take their words out of the document frequencies)."""
        for row, text in zip(rows.tolist(), texts):
            if not self._live[row]:
                continue
            self._live[row] = False
            self._docs -= 1
            self._total_length -= int(self._length[row])
            distinct = self._known(set(words(text)))
            self._df[distinct] -= 1
        firsts = [segment.first_row for segment in self._segments]
        for position in np.unique(np.searchsorted(firsts, rows, side="right") - 1).tolist():
            segment = self._segments[position]
            if 2 * int(self._live[segment.first_row : segment.end_row].sum()) < segment.end_row - segment.first_row:
                self._segments[position] = self._merged(segment)  # more than half dead: rewrite it

    def search(
        self, text: str, depth: int, allowed: Callable[[np.ndarray], np.ndarray] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The best `depth` rows sharing a word with `text`, by BM25 score (best first; ties: earlier row);
        only rows `allowed` keeps (a mask for the rows it is given) when it is given. The statistics (N, df,
        average length) are those of every live cell."""
        terms, repeats = np.unique(self._known(words(text)), return_counts=True)
        if not len(terms) or not self._docs:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        df = self._df[terms]
        weights = np.log1p((self._docs - df + 0.5) / (df + 0.5)) * repeats
        scratch, touched = self._buffers()
        average = self._total_length / self._docs
        found = 0
        for segment in self._segments:
            found = kernels.bm25_into(
                segment.terms, segment.offsets, segment.rows, segment.counts, terms, weights,
                self._length, self._live, K1, B, average, scratch, touched, found,
            )  # fmt: skip
        rows, scores = kernels.collected(scratch, touched, found)
        if allowed is not None:  # an excluded row scores 0 (no masked copy of a common word's rows: 0.6 ms at 100K)
            scores *= allowed(rows)
        best = kernels.best_scored(rows, scores, depth)
        best = best[scores[best] > 0]  # every row sharing a word with the text scores above 0
        return rows[best], scores[best]

    def _known(self, found: Iterable[str]) -> np.ndarray:
        """Term ids of the words the index has seen (others are skipped)."""
        term_of = self._term_of
        return np.fromiter((term_of[w] for w in found if w in term_of), dtype=np.int64)

    def _merged(self, older: _Segment, newer: _Segment | None = None) -> _Segment:
        """One segment with the live postings of `older` (and `newer`, the rows right after it)."""
        parts = [older] if newer is None else [older, newer]
        terms = np.concatenate([np.repeat(p.terms, np.diff(p.offsets)) for p in parts])
        rows = np.concatenate([p.rows for p in parts])
        counts = np.concatenate([p.counts for p in parts])
        keep = self._live[rows]
        order = np.argsort(terms[keep], kind="stable")
        return _csr(older.first_row, parts[-1].end_row, terms[keep][order], rows[keep][order], counts[keep][order])

    def _buffers(self) -> tuple[np.ndarray, np.ndarray]:
        """This thread's zeroed score accumulator and touched-row list, as long as the rows."""
        local = self._scratch
        size = len(self._live)
        if getattr(local, "scores", None) is None or len(local.scores) < size:
            local.scores = np.zeros(max(size, 1024), dtype=np.float64)
            local.touched = np.empty(len(local.scores), dtype=np.int64)
        return local.scores, local.touched


def _build(rows: np.ndarray, terms: np.ndarray, lengths: np.ndarray) -> _Segment:
    """The segment of `rows` (ascending) from their term ids, row after row (`lengths` of them each)."""
    first, end = int(rows[0]), int(rows[-1]) + 1
    span = end - first
    keys = terms * span + np.repeat(rows - first, lengths)
    pairs, counts = np.unique(keys, return_counts=True)  # by term, then row
    return _csr(first, end, pairs // span, pairs % span + first, counts.astype(np.int32))


def _csr(first: int, end: int, terms: np.ndarray, rows: np.ndarray, counts: np.ndarray) -> _Segment:
    """A segment from postings sorted by term."""
    starts = np.flatnonzero(np.r_[True, terms[1:] != terms[:-1]]) if len(terms) else np.zeros(0, dtype=np.int64)
    offsets = np.r_[starts, len(terms)].astype(np.int64)
    return _Segment(first, end, terms[starts].astype(np.int64), offsets, rows.astype(np.int64), counts)
