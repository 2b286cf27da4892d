"""The incremental lexical index scores as BM25 over the live cells would, after any writes and deletes."""

import math
import random
from collections import Counter
from functools import partial

import bm25s
import numpy as np
import pytest
import Stemmer
from bm25s.stopwords import STOPWORDS_EN_PLUS

from harness.data.generators.topics import topic_haystack
from reference.indexes.lexical import K1, STOP_WORDS, B, BM25Index, LexicalIndex, words
from reference.kernels.bm25 import best_scored


def oracle(texts: dict[int, str], query: str) -> dict[int, float]:
    """Lucene BM25 in plain Python over `texts` (row -> text), the rows sharing a word with `query`."""
    docs = {row: Counter(words(text)) for row, text in texts.items()}
    average = sum(sum(c.values()) for c in docs.values()) / len(docs)
    scores: dict[int, float] = {}
    for word in words(query):
        df = sum(word in c for c in docs.values())
        if not df:
            continue
        idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
        for row, counts in docs.items():
            if counts[word]:
                length = sum(counts.values())
                tf = counts[word]
                scores[row] = scores.get(row, 0.0) + idf * tf / (tf + K1 * (1 - B + B * length / average))
    return scores


def ranked(scores: dict[int, float], depth: int) -> list[int]:
    return sorted(scores, key=lambda row: (-scores[row], row))[:depth]


@pytest.fixture(scope="module")
def texts():
    return topic_haystack(600, seed=3).texts


def test_writes_of_every_size_and_deletes_score_as_bm25_over_the_live_cells(texts):
    index, live, rng = BM25Index(), {}, random.Random(4)
    position = 0
    while position < len(texts):
        batch = rng.choice([1, 1, 2, 7, 40, 120])
        rows = np.arange(position, min(position + batch, len(texts)))
        index.add(rows, [texts[r] for r in rows])
        live.update({r: texts[r] for r in rows.tolist()})
        position = int(rows[-1]) + 1
        if rng.random() < 0.3:  # deletes between writes, some of them emptying most of a segment
            doomed = np.asarray(sorted(rng.sample(sorted(live), min(len(live) - 1, rng.choice([1, 5, 60])))))
            index.remove(doomed, [live.pop(r) for r in doomed.tolist()])
    assert set(index.live().tolist()) == set(live) and len(index) == len(live)
    for query in [*texts[::37], "telescope telescope Jupiter", "nothing matches qqqq", "the of and"]:
        rows, scores = index.search(query, 10)
        expected = oracle(live, query)
        assert rows.tolist() == ranked(expected, 10)
        assert scores.tolist() == pytest.approx([expected[r] for r in rows.tolist()])


@pytest.mark.parametrize("share", [0.5, 0.01])
def test_a_restricted_search_ranks_the_allowed_rows_as_the_whole_index_scores_them(texts, share):
    """Excluded rows never come back, and the allowed ones keep their BM25 scores over every live cell; a
    restriction that leaves fewer matching rows than the depth gives only those."""
    index = BM25Index()
    index.add(np.arange(len(texts)), texts)
    allowed_rows = set(random.Random(5).sample(range(len(texts)), int(share * len(texts))))
    mask = np.zeros(len(texts), dtype=bool)
    mask[sorted(allowed_rows)] = True
    for query in [*texts[::61], "the of and telescope"]:
        rows, scores = index.search(query, 10, lambda found: mask[found])
        expected = {r: s for r, s in oracle(dict(enumerate(texts)), query).items() if r in allowed_rows}
        assert rows.tolist() == ranked(expected, 10)
        assert scores.tolist() == pytest.approx([expected[r] for r in rows.tolist()])


def test_the_best_rows_are_those_a_full_sort_ranks_first_ties_by_row():
    rng = np.random.default_rng(6)
    for _ in range(300):
        count, depth = int(rng.integers(0, 300)), int(rng.integers(1, 50))
        rows = rng.permutation(1000)[:count]
        scores = rng.integers(0, 6, count) * 0.25  # many ties
        assert best_scored(rows, scores, depth).tolist() == np.lexsort((rows, -scores))[:depth].tolist()


def test_scores_match_bm25s_rebuilt_over_the_same_cells(texts):
    index = BM25Index()
    for start in range(0, len(texts), 50):
        index.add(np.arange(start, min(start + 50, len(texts))), texts[start : start + 50])
    retriever = bm25s.BM25()  # Lucene's variant, as the engine's docstring promises
    stemmer = Stemmer.Stemmer("english")
    tokens_of = partial(bm25s.tokenize, stopwords="en_plus", stemmer=stemmer, return_ids=False, show_progress=False)
    retriever.index(tokens_of(texts), show_progress=False)
    for query in texts[:40]:
        [tokens] = tokens_of([query])
        theirs = np.asarray(retriever.get_scores(tokens), dtype=np.float64)
        rows, scores = index.search(query, 10)
        assert scores == pytest.approx(theirs[rows], rel=1e-4)
        assert sorted(theirs, reverse=True)[:10] == pytest.approx(scores.tolist(), rel=1e-4)


def test_the_stop_words_are_nltks_as_bm25s_lists_them_and_words_are_stemmed():
    assert set(STOPWORDS_EN_PLUS) == STOP_WORDS
    assert words("What did Ana research? Researching adoption agencies") == [
        "ana",
        "research",
        "research",
        "adopt",
        "agenc",
    ]


def test_a_write_costs_its_own_cells_and_queries_read_few_segments(texts):
    index = BM25Index()
    index.add(np.arange(500), texts[:500])
    for row in range(500, 600):  # one cell a turn, as an agent writes
        index.add(np.asarray([row]), [texts[row]])
        assert index.segments() <= 2 + math.log2(row)
        assert index.search(texts[row], 1)[0][0] == row or texts.index(texts[row]) < row  # an earlier twin may tie


def test_rows_must_be_new_and_ascending(texts):
    index = BM25Index()
    index.add(np.asarray([3, 4]), texts[:2])
    with pytest.raises(ValueError, match="ascending"):
        index.add(np.asarray([4]), texts[2:3])
    with pytest.raises(ValueError, match="ascending"):
        index.add(np.asarray([9, 8]), texts[2:4])


def test_each_scope_scores_as_bm25_over_its_own_live_cells_alone(texts):
    """Writes interleaving three scopes, deletes in each: a scoped search scores as BM25 over that scope's live
    cells (the others' never count); a search of every scope merges them, each by its own scope's scores."""
    index, live, scope_of, rng = LexicalIndex(), {}, {}, random.Random(8)
    for start in range(0, 600, 40):
        rows = np.arange(start, start + 40)
        scopes = np.asarray([rng.choice([0, 1, 1, 2]) for _ in rows])
        index.add(rows, [texts[r] for r in rows], scopes)
        live.update({int(r): texts[r] for r in rows})
        scope_of.update({int(r): int(s) for r, s in zip(rows, scopes)})
        doomed = np.asarray(sorted(rng.sample(sorted(live), 8)))
        index.remove(doomed, [live.pop(r) for r in doomed.tolist()], np.asarray([scope_of[r] for r in doomed]))
    assert index.rows() == set(live)
    for query in rng.sample(texts, 15):
        expected_all: dict[int, float] = {}
        for scope in (0, 1, 2):
            theirs = oracle({r: t for r, t in live.items() if scope_of[r] == scope}, query)
            expected_all.update(theirs)
            rows, scores = index.search(query, 10, scope=scope)
            assert rows.tolist() == ranked(theirs, 10)
            assert np.allclose(scores, [theirs[r] for r in rows.tolist()])
        rows, scores = index.search(query, 10)
        assert rows.tolist() == ranked(expected_all, 10)
    assert index.search(texts[0], 10, scope=9)[0].size == 0  # a scope it never held
