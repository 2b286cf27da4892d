"""Hybrid search: the lexical index beside the groups, fused with dense candidates for text queries."""

import numpy as np
import pytest

from reference import CellularMemory, MemoryConfig
from reference.encoders import MockEncoder
from reference.score.fusion import calibrated_scores, reciprocal_rank

TURNS = [
    "Caroline: I went to the LGBTQ support group yesterday",
    "Melanie: we painted a sunset together at the lake",
    "Caroline: my grandmother gave me this necklace from Sweden",
    "Melanie: the kids loved the pottery class",
]


class Blind(MockEncoder):
    """An encoder that sees nothing: every text gets the same vector, so only words can rank."""

    def encode(self, texts):
        return np.ones((len(texts), self.dim), dtype=np.float32) / np.sqrt(self.dim)


def test_rrf_by_hand_and_ties_share_a_rank():
    rows, scores = reciprocal_rank(
        (np.array([7, 3, 5]), np.array([0.9, 0.8, 0.8])), (np.array([5, 9]), np.array([4.0, 1.0])), rrf_k=0
    )
    by_row = dict(zip(rows.tolist(), scores.tolist()))
    # ranks: dense 7→1, 3→2, 5→2 (tie); lexical 5→1, 9→2; normalised by 2 / (0 + 1)
    assert by_row == pytest.approx({3: 0.25, 5: 0.75, 7: 0.5, 9: 0.25})
    rows, scores = reciprocal_rank((np.array([4, 2]), np.array([0.9, 0.1])), (np.array([4]), np.array([2.0])), rrf_k=60)
    assert scores.tolist() == pytest.approx([0.5 * 61 / 62, 1.0])  # first in both lists scores 1 at any k


def test_calibrated_scores_mix_cosine_and_bm25_per_query():
    asked = []
    rows, scores = calibrated_scores(
        (np.array([1, 4]), np.array([0.7, 0.2])),
        (np.array([2, 1]), np.array([3.0, 1.5])),
        lambda r: asked.append(r.tolist()) or np.full(len(r), 0.5),
        lexical_weight=0.4,
    )
    by_row = dict(zip(rows.tolist(), scores.tolist()))
    assert by_row == pytest.approx({1: 0.6 * 0.7 + 0.4 * 0.5, 2: 0.6 * 0.5 + 0.4, 4: 0.6 * 0.2})
    assert asked == [[2]]  # only the row the dense list lacks is scored again


def test_by_default_a_lead_in_cosine_is_kept_that_rank_fusion_would_drop():
    """The first dense candidate, far ahead in cosine and nearly as good in BM25, ranks first with calibrated scores
    (the default); reciprocal-rank fusion ranks the first BM25 candidate above it, as that one is second in the
    dense list and the other only third in BM25."""
    query = np.eye(8)[0]
    texts = ["the roses in the garden bloom all summer long", "garden roses", "garden roses today"]
    texts += ["a meeting on Monday", "the train was late", "coffee with Sam", "a new laptop"]
    cosines = [0.9, 0.3, 0.29]
    vectors = [cos * np.eye(8)[0] + np.sqrt(1 - cos**2) * np.eye(8)[1 + i] for i, cos in enumerate(cosines)]
    vectors += [np.eye(8)[4 + i] for i in range(3)] + [np.eye(8)[7]]
    with CellularMemory(encoder=MockEncoder(8)) as memory:
        ids = memory.add(texts, vectors=np.asarray(vectors))
        assert memory.config.fusion == "score"
        assert [h.id for h in memory.search("garden roses", k=3, vector=query)] == [ids[0], ids[1], ids[2]]
        memory.set_search_options(fusion="rrf")
        assert memory.search("garden roses", k=1, vector=query)[0].id == ids[1]


def test_words_find_what_the_vectors_cannot():
    with CellularMemory(encoder=Blind(16)) as memory:
        ids = memory.add(TURNS)
        assert memory.search("the necklace from her grandmother", k=1)[0].id == ids[2]
        memory.set_search_options(lexical=False)  # the ablation: dense only, and dense is blind here
        assert [h.score for h in memory.search("necklace", k=4)] == pytest.approx([1.0] * 4)


def test_vector_queries_stay_purely_dense():
    with CellularMemory(encoder=MockEncoder(32)) as memory:
        memory.add(TURNS)
        vector = MockEncoder(32).encode([TURNS[1]])[0]
        [hit] = memory.search(vector, k=1)
        assert hit.text == TURNS[1] and hit.score == pytest.approx(1.0, abs=1e-5)  # a cosine, not a fused score


@pytest.mark.parametrize("store", ["in_memory", pytest.param("embedded", marks=pytest.mark.embedded)])
def test_the_lexical_index_follows_deletes_reopens_and_late_switching_on(tmp_path, store):
    path = str(tmp_path) if store == "embedded" else None
    with CellularMemory(path=path, encoder=Blind(16)) as memory:
        ids = memory.add(TURNS)
        memory.delete([ids[2]])
        assert memory.search("necklace Sweden grandmother", k=3)[0].id != ids[2]
        memory.check_invariants()
    if path:
        with CellularMemory(path=path, encoder=Blind(16)) as reopened:  # rebuilt from the cells
            assert reopened.search("pottery class", k=1)[0].id == ids[3]
            reopened.check_invariants()
    with CellularMemory(path=path, encoder=Blind(16), config=MemoryConfig(lexical=False)) as memory:
        if path is None:  # a new memory: the turns written again
            ids = memory.add(TURNS)
        memory.set_search_options(lexical=True)
        assert memory.search("sunset at the lake", k=1)[0].id == ids[1]


def test_context_is_seen_by_the_encoder_and_the_lexical_index_but_the_text_stays():
    with CellularMemory(encoder=Blind(16)) as memory:
        ids = memory.add(TURNS[:2], context=["[7 May 2023]", "[9 June 2023]"])
        [hit] = memory.search("June 2023", k=1)
        assert hit.id == ids[1] and hit.text == TURNS[1] and hit.metadata["context"] == "[9 June 2023]"


def test_memory_mode_ranks_on_top_of_the_fused_similarity():
    now = [1_000_000.0]
    with CellularMemory(encoder=Blind(16), clock=lambda: now[0]) as memory:
        old, new = memory.add(
            ["the meeting is on Monday", "the meeting is on Monday"], timestamps=[now[0] - 30 * 86_400, now[0]]
        )
        hits = memory.search("when is the meeting", k=2, mode="memory")
        assert [h.id for h in hits] == [new, old] and all(0 <= h.score <= 1 for h in hits)
        similarity = memory.search("when is the meeting", k=2)
        assert similarity[0].score == pytest.approx(similarity[1].score)  # equal cells stay equal when fused
