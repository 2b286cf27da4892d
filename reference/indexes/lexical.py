"""The lexical index: BM25 over cell texts, one index per scope, kept current by every write and delete.

Scoring is Lucene's BM25 as `bm25s` computes it: words of two or more letters, lower-cased, English stop words
removed (NLTK's list, `bm25s`'s "en_plus": question words such as "what" and "did" among them), each reduced to its
Snowball stem (PyStemmer: "researching" matches "research"); idf = ln(1 + (N − df + 0.5) / (df + 0.5)), term weight
tf / (tf + k1 · (1 − b + b · length / average length)), k1 1.5, b 0.75, a word repeated in the query counted each
time. N, df and the average length are those of the live cells of the cell's scope at the moment of the query: a
scoped search reads its own scope's postings only, and what other scopes hold never moves its scores (a side
channel otherwise: a user could tell from their own scores whether a word is common elsewhere). A delete changes
scores exactly as rebuilding the scope's index without the cell would.

Layout (Lucene's segment model, per scope: `BM25Index`): each write appends an immutable segment of postings (for
each word, the positions that hold it and how often) built from the write's cells alone, and segments of similar
size are merged as they accumulate (the last two whenever the newer holds at least half as many postings as
the older: at most log2 of the postings segments, each posting merged O(log N) times). A delete marks
its positions dead (the postings stay until their segment is merged or is more than half dead, then
rewritten) and takes their words out of the document frequencies. A query reads only the postings
of its words, in every segment, in one compiled pass each (`kernels.bm25.bm25_into`). `LexicalIndex` addresses cells
by table row, like the group and entity indexes, each scope's index by the position of a cell among its scope's;
it is derived from the cells and rebuilt on open.
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np
import Stemmer
from bm25s.stopwords import STOPWORDS_EN_PLUS

from ..cells.scopes import by_code
from ..cells.table import with_room
from ..kernels.bm25 import best_scored, bm25_into, collected

STOP_WORDS = frozenset(STOPWORDS_EN_PLUS)
"""NLTK's English stop words, the list `bm25s` removes with stopwords="en_plus"."""
WORD = re.compile(r"(?u)\b\w\w+\b")
_STEMMERS = threading.local()
"""A Snowball stemmer per thread (PyStemmer's are not safe to share between threads)."""
K1 = 1.5
B = 0.75
SMALL = 64
"""Entries a scope's arrays start with: many scopes hold a few cells each."""


def words(text: str) -> list[str]:
    """The indexed words of a text, stemmed, in order (repeats kept)."""
    stemmer = getattr(_STEMMERS, "english", None)
    if stemmer is None:
        stemmer = _STEMMERS.english = Stemmer.Stemmer("english")
    found: list[str] = stemmer.stemWords([word for word in WORD.findall(text.lower()) if word not in STOP_WORDS])
    return found


class _Vocabulary(dict[str, int]):
    """Word → term id; looking up a new word gives it the next id."""

    def __missing__(self, word: str) -> int:
        term = self[sys.intern(word)] = len(self)  # one string per word, however many scopes' vocabularies hold it
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


class BM25Index:
    """BM25 over texts addressed by position, with statistics of its own texts; writes and deletes cost in
    proportion to their own cells. Change it under the engine's write lock; searches may run at once."""

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

    def live(self) -> np.ndarray:
        """The positions indexed and not removed, ascending."""
        return np.flatnonzero(self._live)

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
        self._length, self._live = with_room(self._length, end, least=SMALL), with_room(self._live, end, least=SMALL)
        self._length[rows] = lengths
        self._live[rows] = True
        self._docs += len(rows)
        self._total_length += int(lengths.sum())
        segment = _build(rows, terms, lengths)
        self._df = with_room(self._df, len(self._term_of), least=SMALL)
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
        average length) are those of every live text of this index."""
        terms, repeats = np.unique(self._known(words(text)), return_counts=True)
        if not len(terms) or not self._docs:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        df = self._df[terms]
        weights = np.log1p((self._docs - df + 0.5) / (df + 0.5)) * repeats
        scratch, touched = self._buffers()
        average = self._total_length / self._docs
        found = 0
        for segment in self._segments:
            found = bm25_into(
                segment.terms, segment.offsets, segment.rows, segment.counts, terms, weights,
                self._length, self._live, K1, B, average, scratch, touched, found,
            )  # fmt: skip
        rows, scores = collected(scratch, touched, found)
        if allowed is not None:  # an excluded row scores 0 (no masked copy of a common word's rows)
            scores *= allowed(rows)
        best = best_scored(rows, scores, depth)
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
            local.scores = np.zeros(max(size, SMALL), dtype=np.float64)
            local.touched = np.empty(len(local.scores), dtype=np.int64)
        return local.scores, local.touched


class LexicalIndex:
    """Row-addressed BM25 with one `BM25Index` per scope (a scope code per row), so that a scoped search
    reads and is scored by its own scope's cells alone; a search of every scope merges each scope's best,
    every cell scored by its own scope's statistics."""

    def __init__(self) -> None:
        self._scopes: dict[int, BM25Index] = {}
        self._rows: dict[int, np.ndarray] = {}
        """Each scope's table rows by position in its index (room for more after its `_sizes`)."""
        self._sizes: dict[int, int] = {}
        self._position = np.zeros(0, dtype=np.int64)
        """A row's position in its scope's index."""

    def __len__(self) -> int:
        return sum(map(len, self._scopes.values()))

    def rows(self) -> set[int]:
        return {row for scope, index in self._scopes.items() for row in self._rows[scope][index.live()].tolist()}

    def segments(self, scope: int) -> int:
        """How many segments a search of `scope` reads (O(log N) in its cells)."""
        return self._scopes[scope].segments() if scope in self._scopes else 0

    def add(self, rows: np.ndarray, texts: Sequence[str], scopes: np.ndarray) -> None:
        """Index rows with their texts and scope codes (each row once)."""
        if not len(rows):
            return
        self._position = with_room(self._position, int(rows.max()) + 1)
        for scope, members in by_code(scopes):
            mine = rows[members]
            size = self._sizes.get(scope, 0)
            positions = np.arange(size, size + len(mine))
            self._scopes.setdefault(scope, BM25Index()).add(positions, [texts[i] for i in members.tolist()])
            held = with_room(self._rows.get(scope, np.zeros(0, np.int64)), size + len(mine), least=SMALL)
            held[positions] = mine
            self._rows[scope], self._sizes[scope] = held, size + len(mine)
            self._position[mine] = positions

    def remove(self, rows: np.ndarray, texts: Sequence[str], scopes: np.ndarray) -> None:
        """Take rows out (their `texts` as indexed and their scope codes)."""
        for scope, members in by_code(scopes):
            index = self._scopes[scope]
            index.remove(self._position[rows[members]], [texts[i] for i in members.tolist()])
            if not len(index):  # a scope emptied starts again from nothing
                del self._scopes[scope], self._rows[scope], self._sizes[scope]

    def search(
        self,
        text: str,
        depth: int,
        allowed: Callable[[np.ndarray], np.ndarray] | None = None,
        scope: int | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The best `depth` rows sharing a word with `text` (of `scope`, or of every scope), by BM25 score,
        best first; only rows `allowed` keeps (a mask for the rows it is given) when it is given."""
        scopes = list(self._scopes) if scope is None else [scope] if scope in self._scopes else []
        found = [self._search_one(one, text, depth, allowed) for one in scopes]
        if len(found) == 1:
            return found[0]
        rows = np.concatenate([f[0] for f in found]) if found else np.zeros(0, dtype=np.int64)
        scores = np.concatenate([f[1] for f in found]) if found else np.zeros(0, dtype=np.float64)
        best = np.lexsort((rows, -scores))[:depth]
        return rows[best], scores[best]

    def _search_one(
        self, scope: int, text: str, depth: int, allowed: Callable[[np.ndarray], np.ndarray] | None
    ) -> tuple[np.ndarray, np.ndarray]:
        rows_of = self._rows[scope]
        within = None if allowed is None else lambda positions: allowed(rows_of[positions])
        positions, scores = self._scopes[scope].search(text, depth, within)
        return rows_of[positions], scores


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
