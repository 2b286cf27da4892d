"""The chance level of evidence recall, exact, against a seeded simulation of random rankings; and the flags a
dialogue row carries (chance, candidates and the mark where k reaches them, ingest cost)."""

import json
from math import comb

import numpy as np
import pytest

from harness.measure.chance import Chance, chance_at_k, mean_chance


def simulated(candidates: int, groups: list[int], k: int, draws: int = 20_000) -> Chance:
    """Random rankings drawn for real: the top k of a permutation, scored as a dialogue row scores them."""
    rng = np.random.default_rng(7)
    owner = np.full(candidates, -1)
    start = 0
    for number, size in enumerate(groups):
        owner[start : start + size] = number
        start += size
    shares, anys, alls = [], [], []
    for _ in range(draws):
        top = owner[rng.permutation(candidates)[:k]]
        hit = len(set(top[top >= 0].tolist()))
        shares.append(hit / len(groups))
        anys.append(hit > 0)
        alls.append(hit == len(groups))
    return Chance(float(np.mean(shares)), float(np.mean(anys)), float(np.mean(alls)))


@pytest.mark.parametrize(
    ("candidates", "groups", "k"),
    [(30, [1], 10), (30, [1, 1, 1], 10), (120, [7, 3], 10), (25, [5, 1, 2, 4], 5), (19, [1] * 4, 10)],
)
def test_the_exact_chance_level_matches_random_rankings(candidates, groups, k):
    exact, drawn = chance_at_k(candidates, groups, k), simulated(candidates, groups, k)
    assert exact.recall == pytest.approx(drawn.recall, abs=0.01)
    assert exact.recall_any == pytest.approx(drawn.recall_any, abs=0.01)
    assert exact.recall_all == pytest.approx(drawn.recall_all, abs=0.01)


def test_single_turn_evidence_has_closed_forms():
    chance = chance_at_k(600, [1, 1], 10)
    assert chance.recall == pytest.approx(10 / 600)
    assert chance.recall_any == pytest.approx(1 - comb(598, 10) / comb(600, 10))
    assert chance.recall_all == pytest.approx(comb(598, 8) / comb(600, 10))


def test_k_at_or_past_the_candidates_finds_everything_and_bad_input_is_refused():
    assert chance_at_k(10, [2, 3], 10) == Chance(1.0, 1.0, 1.0)
    for candidates, groups, k in [(10, [], 3), (10, [0], 3), (10, [6, 5], 3), (10, [1], 0)]:
        with pytest.raises(ValueError, match="chance needs"):
            chance_at_k(candidates, groups, k)
    assert np.isnan(mean_chance([]).recall)


def test_dialogue_rows_carry_chance_candidates_and_ingest_cost(tmp_path):
    from harness.data.spec import DatasetSpec
    from harness.experiments.definition import RunContext
    from harness.experiments.dialogue import COVERED, candidates, dialogue_fields
    from harness.experiments.dialogue import run as dialogue
    from harness.measure.plan import RunPlan
    from reference.encoders import MockEncoder

    sessions = {
        f"session_{n}": [
            {"speaker": "Ana", "dia_id": f"D{n}:1", "text": f"Day {n}: I planted tree {n}."},
            {"speaker": "Ben", "dia_id": f"D{n}:2", "text": "Nice one."},
        ]
        for n in range(1, 15)
    }
    qa = [
        {"question": "Which tree came first?", "evidence": ["D1:1"], "category": 4},
        {"question": "Which trees did Ana plant?", "evidence": ["D2:1", "D9:1"], "category": 1},
        {"question": "What did Ben plant?", "evidence": ["D3:2"], "category": 5},
    ]
    path = tmp_path / "trees.json"
    path.write_text(json.dumps({"sample_id": "trees", "conversation": sessions, "qa": qa}))
    context = RunContext(RunPlan(), {"mock": MockEncoder()}, DatasetSpec.parse(f"locomo:{path}"), ("flat-numpy",))
    rows = {(r.mode, r.granularity, r.subset): r for r in dialogue(context, k=10)}

    turn = rows["bulk", "turn", "all questions"]
    expected = mean_chance([chance_at_k(28, [1], 10), chance_at_k(28, [1, 1], 10), chance_at_k(28, [1], 10)])
    assert turn.chance == expected and turn.candidates == (28, 28) and not turn.k_covers_candidates
    ranked = rows["bulk", "session (ranked)", "answerable"]
    assert ranked.chance == mean_chance([chance_at_k(14, [1], 10), chance_at_k(14, [1, 1], 10)])
    session = rows["bulk", "session", "answerable"]  # sessions of the top 10 turns: a session is 2 of 28 turns
    assert session.chance == mean_chance([chance_at_k(28, [2], 10), chance_at_k(28, [2, 2], 10)])
    assert turn.ingest_ms_per_turn > 0 and rows["online: at the end", "turn", "all questions"].ingest_ms_per_turn > 0
    fields = dialogue_fields(turn)
    assert (fields["unanswerable"], fields["chance_any"]) == ("in", expected.recall_any)
    assert dialogue_fields(rows["bulk", "turn", "apart: adversarial"])["unanswerable"] == "only"
    assert dialogue_fields(rows["bulk", "turn", "answerable"])["unanswerable"] == "out"
    # asked when due, a question's memory holds only the sessions written so far: k reaches them, and it shows
    early = [r for (mode, level, _), r in rows.items() if mode == "online: when due" and level == "session"]
    assert early and all(r.k_covers_candidates and candidates(r).endswith(COVERED) for r in early if r.candidates)
