"""The field's claims as data: each is judged only against a reading under its own metric definition, and a claim
that cannot run here says why."""

import dataclasses

import pytest

from harness.measure.readings import Metric, Reading, comparable, interval, per_question
from harness.output.results import RunResults
from harness.verdicts.field import FIELD_CLAIMS, NOT_MEASURED, NOT_RUNNABLE, REFUTED, REPRODUCED, FieldClaim

METRIC = Metric("sessions", "session", "recall", 10, "in", "all-MiniLM-L6-v2")
CLAIM = FieldClaim("x-locomo", "x", "X: LoCoMo session R@10 60%", 0.60, "locomo", "LoCoMo", METRIC, "MiniLM", "src")


def results(*readings: Reading, dataset: str = "locomo:conv.json") -> RunResults:
    from tests.results_factory import run_info

    return RunResults(run=dataclasses.replace(run_info(), dataset=dataset), field_claims=list(readings))


def reading(metric: Metric, value: float, low: float, high: float) -> Reading:
    return Reading("sessions", "locomo-dev", metric, value, low, high, 1000)


@pytest.mark.parametrize(
    "change",
    [
        {"documents": "turns"},
        {"level": "turn"},
        {"score": "recall_any"},
        {"k": 5},
        {"unanswerable": "out"},
        {"encoder": "nomic-embed-text"},
    ],
)
def test_a_claim_is_never_compared_with_a_figure_under_another_definition(change):
    other = dataclasses.replace(METRIC, **change)
    assert not comparable(METRIC, other)
    verdict = CLAIM.evaluate(results(reading(other, 0.60, 0.55, 0.65)))  # the very figure, another definition
    assert verdict.verdict == NOT_MEASURED and "0.600" not in verdict.measured


def test_a_reading_under_the_claims_metric_reproduces_or_refutes_it_by_its_interval():
    assert CLAIM.evaluate(results(reading(METRIC, 0.58, 0.55, 0.61))).verdict == REPRODUCED
    refuted = CLAIM.evaluate(
        results(
            reading(METRIC, 0.50, 0.47, 0.53),
            reading(dataclasses.replace(METRIC, score="recall_any"), 0.61, 0.58, 0.64),
        )
    )
    assert refuted.verdict == REFUTED
    assert "matches recall_any@10" in refuted.measured  # the other reading the published figure matches


def test_a_claim_on_a_file_the_user_did_not_supply_is_not_runnable_here():
    longmemeval = next(c for c in FIELD_CLAIMS if c.id == "mempalace-longmemeval-all")
    verdict = longmemeval.evaluate(results(reading(METRIC, 0.6, 0.5, 0.7)))
    assert (
        verdict.verdict == NOT_RUNNABLE and "a file the user supplies (--dataset longmemeval:FILE" in verdict.measured
    )


def test_every_field_claim_has_its_definition_and_source_or_says_why_it_cannot_run():
    ids = [c.id for c in FIELD_CLAIMS]
    assert len(ids) == len(set(ids))
    for claim in FIELD_CLAIMS:
        assert claim.source and claim.split and claim.models
        if claim.not_runnable:
            assert claim.evaluate(results()).verdict == NOT_RUNNABLE
        else:
            assert claim.metric is not None and claim.figure is not None
    accuracy = [c for c in FIELD_CLAIMS if c.metric is None and c.figure is not None]
    assert accuracy and all("judge" in c.not_runnable for c in accuracy)


def test_per_question_scores_and_their_interval():
    found, wanted = [["a", "b"], ["c"], ["d"]], [["a", "x"], ["y"], []]
    assert per_question(found, wanted, 2, "recall").tolist() == [0.5, 0.0]
    assert per_question(found, wanted, 2, "recall_any").tolist() == [1.0, 0.0]
    assert per_question(found, wanted, 2, "recall_all").tolist() == [0.0, 0.0]
    values = per_question([["a"]] * 50 + [["b"]] * 50, [["a"]] * 100, 1, "recall_any")
    low, high = interval(values)
    assert low < 0.5 < high and interval(values) == (low, high)  # seeded


def test_the_session_protocol_builds_documents_as_the_source_script_does(tmp_path):
    import json

    from harness.data.dialogue import TurnFormat, load_dialogue
    from harness.data.spec import DatasetSpec
    from harness.experiments.definition import RunContext
    from harness.experiments.field_claims import line, ranked_sessions, sessions_of
    from harness.experiments.field_claims import run as field_claims
    from harness.measure.plan import RunPlan
    from reference.encoders import MockEncoder

    sample = {
        "sample_id": "garden",
        "conversation": {
            f"session_{n}": [{"speaker": "Ana", "dia_id": f"D{n}:1", "text": words}]
            for n, words in enumerate(["I planted roses.", "We baked bread.", "The roses bloomed red."], start=1)
        },
        "qa": [{"question": "Which roses did Ana plant?", "evidence": ["D1:1", "D3:1"], "category": 1}],
    }
    path = tmp_path / "garden.json"
    path.write_text(json.dumps(sample))
    spec = DatasetSpec.parse(f"locomo:{path}")
    [conversation] = load_dialogue(spec, TurnFormat.parse("plain")).conversations
    assert next(line(d, "locomo") for _, turns in sessions_of(conversation, "locomo") for d in turns) == (
        'Ana said, "I planted roses."'
    )
    [ranking] = ranked_sessions(conversation, "locomo", "sessions", MockEncoder())
    assert sorted(ranking) == ["S1", "S2", "S3"] and ranking[-1] == "S2"  # bread shares no word with the question
    context = RunContext(RunPlan(), {"mock": MockEncoder()}, spec)
    assert field_claims(context) == []  # the claims name MiniLM: another encoder reproduces none
