"""The public API of CellularMemory: behaviour, bad input, all-or-nothing writes."""

import re
from dataclasses import fields

import numpy as np
import pytest

from harness.data.generators.vectors import clustered_unit_vectors
from reference import (
    CellularMemory,
    DimensionMismatchError,
    InvalidInputError,
    MagneticError,
    MemoryConfig,
    NotFoundError,
)
from reference.common.config import RULES
from reference.score.scoring import SECONDS_PER_DAY

TEXTS = [
    "The cat sat on the warm mat",
    "A cat sleeps on a mat all day",
    "Stock markets fell sharply on Monday",
    "Maria Lopez's email address is maria.lopez@example.com",
]


@pytest.fixture
def memory(mock_encoder):
    with CellularMemory(encoder=mock_encoder) as mem:
        mem.add(TEXTS)
        yield mem


def snapshot(mem: CellularMemory) -> tuple:
    stats = mem.stats()
    return len(mem), tuple(mem.ids()), stats.groups, stats.entities


def test_add_returns_unique_ids_and_search_finds_related_text(memory):
    assert len(memory) == 4 and len(set(memory.ids())) == 4
    hits = memory.search("where does the cat sleep", k=2)
    assert [h.text for h in hits] == TEXTS[1::-1] or {h.text for h in hits} == set(TEXTS[:2])
    assert hits[0].score >= hits[1].score


def test_hits_are_sorted_unique_and_at_most_k(memory):
    for k in (1, 3, 10):
        hits = memory.search("cat markets email", k=k)
        assert len(hits) == min(k, len(memory))
        assert len({h.id for h in hits}) == len(hits)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_a_stored_vector_finds_itself(memory, mock_encoder):
    vector = mock_encoder.encode([TEXTS[2]])[0]
    assert memory.search(vector, k=1)[0].text == TEXTS[2]


DENSE_ONLY = MemoryConfig(lexical=False)
"""Text queries without BM25 fusion: similarity-mode scores are cosines (+ entity boosts)."""


def test_entity_in_query_boosts_the_cell_that_mentions_it(mock_encoder):
    with CellularMemory(encoder=mock_encoder, config=DENSE_ONLY) as mem:
        mem.add(TEXTS)
        hit = mem.search("Who is Maria Lopez?", k=1)[0]
    assert hit.text == TEXTS[3]
    assert hit.score > 1.0  # cosine + entity boost


def test_entity_boost_can_be_ablated(mock_encoder):
    with CellularMemory(encoder=mock_encoder, config=MemoryConfig(use_entities=False, lexical=False)) as mem:
        mem.add(TEXTS)
        assert mem.search("Who is Maria Lopez?", k=1)[0].score <= 1.0


def test_fallback_fills_k_when_the_groups_hold_too_few(mock_encoder):
    """Top-k probing reads one group here, which holds fewer than k cells: the flat search fills in."""
    with CellularMemory(encoder=mock_encoder, config=MemoryConfig.prototype(group_top_k=1)) as mem:
        mem.add(TEXTS)
        assert max(mem.stats().group_size_max, 1) < 4 <= len(mem)
        assert len(mem.search("cat", k=4)) == 4


def test_metadata_kind_and_importance_round_trip(memory):
    [cell_id] = memory.add("Paris is the capital of France", kind="fact", metadata={"source": "atlas", "page": 3})
    cell = memory.get(cell_id)
    assert (cell.kind, cell.importance, cell.metadata) == ("fact", 0.9, {"source": "atlas", "page": 3})
    assert memory.search("capital of France", k=1)[0].metadata == {"source": "atlas", "page": 3}


def test_delete_removes_cells_from_every_stage(memory):
    victim = memory.search("stock markets", k=1)[0].id
    assert memory.delete([victim]) == 1
    assert victim not in memory and len(memory) == 3
    assert all(h.id != victim for h in memory.search("stock markets fell", k=4))
    with pytest.raises(NotFoundError):
        memory.get(victim)


def test_memory_mode_prefers_recent_then_important_memories(mock_encoder):
    now = [1_000 * SECONDS_PER_DAY]
    same = np.tile(mock_encoder.encode(["the meeting is on Monday"]), (3, 1))  # equal similarity: scoring decides
    with CellularMemory(encoder=mock_encoder, clock=lambda: now[0]) as mem:
        old, new = mem.add(
            ["meeting: Monday", "meeting: Tuesday"],
            vectors=same[:2],
            timestamps=[now[0] - 30 * SECONDS_PER_DAY, now[0]],
        )
        assert [h.id for h in mem.search("when is the meeting", k=2, mode="memory")] == [new, old]
        assert [h.id for h in mem.search("when is the meeting", k=2)] == [old, new]  # ties: insertion order
        now[0] += 365 * SECONDS_PER_DAY  # a year on, recency is ~0 for all; the fact's importance wins
        [fact] = mem.add("meeting: Friday", vectors=same[2:], kind="fact", timestamps=[now[0] - 365 * SECONDS_PER_DAY])
        assert mem.search("when is the meeting", k=1, mode="memory")[0].id == fact


def test_score_threshold_drops_weak_memories(mock_encoder):
    with CellularMemory(encoder=mock_encoder, config=MemoryConfig(score_threshold=0.99)) as mem:
        mem.add(TEXTS)
        assert mem.search("cat", k=3, mode="memory") == []
        assert len(mem.search("cat", k=3)) == 3  # similarity mode ignores it


def test_access_counts_grow_with_each_return(memory):
    target = memory.search("stock markets", k=1)[0].id
    before = memory.get(target).access_count
    memory.search("stock markets", k=1)
    assert memory.get(target).access_count == before + 1


def test_search_batch_equals_single_searches(memory):
    queries = ["cat on a mat", "markets", "Maria Lopez"]
    batch = memory.search_batch(queries, k=2)
    assert [[h.id for h in hits] for hits in batch] == [[h.id for h in memory.search(q, k=2)] for q in queries]


def test_stats_describe_groups(memory):
    stats = memory.stats()
    assert stats.cells == 4 and 1 <= stats.groups <= 4
    assert stats.group_size_max >= stats.group_size_median >= stats.group_size_min >= 1
    assert stats.as_dict()["encoder"] == "mock-384"


def test_empty_memory_returns_nothing(mock_encoder):
    with CellularMemory(encoder=mock_encoder) as mem:
        assert mem.search("anything") == []


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda m: m.add(""), InvalidInputError),
        (lambda m: m.add(["fine", "   "]), InvalidInputError),
        (lambda m: m.add([b"bytes"]), InvalidInputError),
        (lambda m: m.add(["a", "b"], vectors=np.ones((1, 384))), InvalidInputError),
        (lambda m: m.add(["a"], vectors=np.ones((1, 12))), DimensionMismatchError),
        (lambda m: m.add(["a", "b"], vectors=np.vstack([np.ones(384), np.full(384, np.nan)])), InvalidInputError),
        (lambda m: m.add(["a"], vectors=np.zeros((1, 384))), InvalidInputError),
        (lambda m: m.add(["a"], vectors=np.full((1, 384), np.inf)), InvalidInputError),
        (lambda m: m.add(["a"], kind="dream"), InvalidInputError),
        (lambda m: m.add(["a"], importance=1.5), InvalidInputError),
        (lambda m: m.add(["a"], metadata={"x": object()}), InvalidInputError),
        (lambda m: m.add(["a", "b"], ids=["same", "same"]), InvalidInputError),
        (lambda m: m.add(["a"], ids=[m.ids()[0]]), InvalidInputError),
        (lambda m: m.add(["a"], timestamps=[float("nan")]), InvalidInputError),
        (lambda m: m.search("cat", k=0), InvalidInputError),
        (lambda m: m.search("", k=1), InvalidInputError),
        (lambda m: m.search(np.ones(7), k=1), DimensionMismatchError),
        (lambda m: m.search("cat", mode="fuzzy"), InvalidInputError),
        (lambda m: m.delete(["nope"]), NotFoundError),
        (lambda m: m.delete([m.ids()[0], "nope"]), NotFoundError),
        (lambda m: m.get("nope"), NotFoundError),
    ],
)
def test_bad_input_raises_a_typed_error_and_changes_nothing(memory, call, error):
    before = snapshot(memory)
    with pytest.raises(error) as raised:
        call(memory)
    assert isinstance(raised.value, MagneticError)
    assert str(raised.value)
    assert snapshot(memory) == before


def test_closed_memory_refuses_calls(mock_encoder):
    mem = CellularMemory(encoder=mock_encoder)
    mem.close()
    mem.close()  # idempotent
    with pytest.raises(InvalidInputError, match="closed"):
        mem.search("x")


def test_invalid_config_lists_every_problem():
    with pytest.raises(InvalidInputError, match=r"group_top_k.*max_groups|max_groups.*group_top_k"):
        MemoryConfig(group_top_k=0, max_groups=0)


BAD_SETTINGS = {
    "grouping": "kmeans", "join_threshold": 1.0, "max_groups": 0, "group_size": 1, "group_size_per_sqrt_n": -0.5,
    "split_factor": 1.0, "fragment_divisor": 1, "sleep_rounds": 0, "sleep_settled": 1.5, "probing": "all",
    "probe_per_k": 0, "probe_per_sqrt_n": -1.0, "probe_margin": -0.1, "target_recall": 0.0, "probe_cost_cells": -1,
    "group_top_k": 0, "fusion": "max", "fusion_depth": 0, "rrf_k": -1, "lexical_weight": -0.1,
    "episode_weight": -1.0, "neighbour_weight": -1.0, "asking_penalty": -1.0, "speaker_key": "",
    "speaker_weight": -1.0, "episode_gap_s": -1.0, "entity_boost": -1.0, "merge_threshold": -1.0,
    "half_life_days": 0.0, "access_saturation": 0, "superseded_penalty": -1.0, "kind_importance": {"fact": 2.0},
    "group_backend": "faiss", "namespace": "a b", "lease_seconds": 0.1, "ingest_chunk": 0, "concept_limit": 2,
    "resident_cells": True,
}  # fmt: skip


def test_every_checked_setting_is_a_field_and_refuses_a_value_out_of_its_rule():
    assert set(RULES) <= {f.name for f in fields(MemoryConfig)}
    assert set(BAD_SETTINGS) == set(RULES)
    for name, bad in BAD_SETTINGS.items():
        with pytest.raises(InvalidInputError, match=re.escape(f"{name} {RULES[name].says}")):
            MemoryConfig(**{name: bad})


@pytest.mark.parametrize("config", [MemoryConfig(), DENSE_ONLY], ids=["hybrid", "dense"])
def test_text_query_with_a_given_vector_skips_the_encoder_but_keeps_entities(mock_encoder, config):
    with CellularMemory(encoder=mock_encoder, config=config) as memory:
        memory.add(TEXTS)
        vector = mock_encoder.encode(["Who is Maria Lopez?"])[0]
        with_vector = memory.search("Who is Maria Lopez?", k=2, vector=vector)
        assert [(h.id, round(h.score, 6)) for h in with_vector] == [
            (h.id, round(h.score, 6)) for h in memory.search("Who is Maria Lopez?", k=2)
        ]
        assert with_vector[0].text == TEXTS[3]
        if not config.lexical:
            assert with_vector[0].score > 1.0  # entity boost applied from the text
        with pytest.raises(InvalidInputError):
            memory.search_batch(["a", "b"], k=1, vectors=[vector])


def test_search_options_change_at_query_time_and_are_validated(memory):
    memory.set_search_options(probe_per_sqrt_n=4, use_entities=False)
    assert memory.config.probe_per_sqrt_n == 4 and not memory.config.use_entities
    assert memory.search("Who is Maria Lopez?", k=1)[0].score <= 1.0
    with pytest.raises(InvalidInputError):
        memory.set_search_options(join_threshold=0.1)  # an ingest-time setting
    with pytest.raises(InvalidInputError):
        memory.set_search_options(group_top_k=0)


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"group_top_k": 5}, "group_top_k applies only with probing='top_k'"),
        ({"min_score": 0.3}, "min_score applies only with probing='top_k'"),
        ({"probe_per_sqrt_n": 8, "probing": "top_k"}, "probe_per_sqrt_n applies only with probing='budget'"),
        ({"lexical_weight": 0.4, "fusion": "rrf"}, "lexical_weight applies only with lexical=True and fusion='score'"),
        ({"rrf_k": 60}, "rrf_k applies only with lexical=True and fusion='rrf'"),
        ({"entity_boost": 2.0, "use_entities": False}, "entity_boost applies only with use_entities=True"),
    ],
)
def test_a_setting_that_would_do_nothing_is_refused(memory, changes, named):
    before = memory.config
    with pytest.raises(InvalidInputError, match=re.escape(named)):
        memory.set_search_options(**changes)
    assert memory.config == before
    with pytest.raises(InvalidInputError, match=re.escape(named)):
        MemoryConfig(**changes)


def test_a_setting_that_applies_is_taken():
    assert MemoryConfig.prototype(group_top_k=5).group_top_k == 5
    assert MemoryConfig(fusion="rrf", rrf_k=60).rrf_k == 60 and MemoryConfig(lexical_weight=0.4).lexical_weight == 0.4
    assert MemoryConfig(grouping="threshold", max_groups=10).max_groups == 10


def test_deleting_an_id_listed_twice_deletes_it_once(memory):
    victim = memory.ids()[0]
    assert memory.delete([victim, victim]) == 1 and victim not in memory


def test_a_kind_that_is_not_a_string_is_a_typed_error(memory):
    with pytest.raises(InvalidInputError, match="unknown kind"):
        memory.add("x", kind=["fact"])


def test_a_search_after_each_change_sees_the_memory_as_it_is_now(mock_encoder):
    """What a probe reads is worked out once per state of the memory: after a write, a delete and a sleep the
    next search reads the groups there are now (a cell written to a new scope founds a group of its own, which
    only a probe that knows of that group reads)."""
    data = clustered_unit_vectors(3000, mock_encoder.dim, 30, spread=0.3, queries=1, seed=3)
    query = data.queries[0]
    with CellularMemory(encoder=mock_encoder, config=MemoryConfig(lexical=False)) as memory:
        memory.add(["cell"] * 3000, vectors=data.vectors)
        assert memory.search(query, k=5)[0].id != "copy"
        memory.add(["copy"], vectors=[query], ids=["copy"], scope="elsewhere")
        assert memory.search(query, k=5)[0].id == "copy"
        memory.delete(["copy"])
        assert "copy" not in {hit.id for hit in memory.search(query, k=5)}
        memory.consolidate()
        memory.add(["copy"], vectors=[query], ids=["copy"], scope="further")
        assert memory.search(query, k=5)[0].id == "copy"
        assert memory.stats().flat_searches == 0
