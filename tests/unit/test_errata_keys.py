"""With LoCoMo's corrections (`--errata`) every retrieval table scores one ranking on both keys: the file's own
evidence and the corrected one, in the dialogue rows, the field readings and the claims' verdicts."""

from __future__ import annotations

import dataclasses

import pytest

from harness.data.errata import CORRECTED, ORIGINAL, keyed_dialogue
from harness.data.spec import DatasetSpec
from harness.experiments.definition import RunContext
from harness.measure.plan import RunPlan
from harness.measure.readings import Metric, Reading
from harness.output.results import RunResults
from harness.verdicts.field import REFUTED, FieldClaim
from reference.encoders import MockEncoder
from tests.locomo_fixture import audit_id, conversation, write

EVERY_TURN = ["D1:1", "D1:2", "D1:3", "D1:4", "D2:1", "D2:2", "D2:3"]


@pytest.fixture
def keyed_run(tmp_path):
    """The fixture's conversation and an audit that gives its multi-hop question every turn as evidence and its
    adversarial question (no evidence on the file's key) one turn."""
    data = write(tmp_path / "conv.json", conversation())
    errata = write(
        tmp_path / "errors.json",
        [
            {
                "question_id": audit_id(0, 0),
                "question": "What instruments does Ann play?",
                "correct_evidence": EVERY_TURN,
            },
            {"question_id": audit_id(0, 5), "question": "What is Ben's cat called?", "correct_evidence": ["D2:2"]},
        ],
    )
    return DatasetSpec.parse(f"locomo:{data}"), errata


def test_one_set_of_questions_carries_the_evidence_of_both_keys(keyed_run):
    spec, errata = keyed_run
    keyed = keyed_dialogue(spec, errata=errata)
    [conversation_set] = keyed.data.conversations
    assert [q.id for q in conversation_set.queries][-1] == "conv-a/q5"  # asked on the corrected key only
    assert keyed.evidence[ORIGINAL]["conv-a/q0"] == ["D1:3"] and keyed.evidence[CORRECTED]["conv-a/q0"] == EVERY_TURN
    assert "conv-a/q5" not in keyed.evidence[ORIGINAL] and keyed.evidence[CORRECTED]["conv-a/q5"] == ["D2:2"]
    assert keyed.unscored == {ORIGINAL: 1, CORRECTED: 0}
    assert keyed.corrections.startswith("2 questions changed (0 answers, 2 evidence lists)")
    assert set(keyed_dialogue(spec).evidence) == {ORIGINAL}  # no corrections: the original key alone


def test_every_dialogue_row_is_scored_on_both_keys_from_the_same_ranking(keyed_run):
    from harness.experiments.dialogue import AT_THE_END, BULK, WHEN_DUE
    from harness.experiments.dialogue import run as dialogue  # registered as a run does

    spec, errata = keyed_run
    context = RunContext(RunPlan(), {"mock": MockEncoder()}, spec, systems=("flat-numpy",), errata=errata)
    rows = {(r.mode, r.key, r.granularity, r.subset): r for r in dialogue(context, k=2)}
    # every turn is the multi-hop question's evidence on the corrected key: 2 of 7 found whatever the ranking
    corrected = rows[BULK, CORRECTED, "turn", "multi-hop"].scores
    assert (corrected.queries, corrected.recall, corrected.recall_any, corrected.recall_all) == (1, 2 / 7, 1.0, 0.0)
    assert rows[BULK, CORRECTED, "turn", "multi-hop"].chance.recall == pytest.approx(2 / 7)
    assert rows[BULK, ORIGINAL, "turn", "multi-hop"].chance.recall == pytest.approx(2 / 7)  # 1 turn of 7, k = 2
    # the question with no evidence on the file's key is scored on the corrected key only
    assert rows[BULK, CORRECTED, "turn", "apart: adversarial"].scores.queries == 1
    assert (BULK, ORIGINAL, "turn", "apart: adversarial") not in rows
    # the other questions are unchanged: one ranking scores the same on both keys
    for subset in ("temporal", "open-domain", "single-hop"):
        assert rows[BULK, ORIGINAL, "turn", subset].scores == rows[BULK, CORRECTED, "turn", subset].scores
        assert rows[AT_THE_END, ORIGINAL, "turn", subset].scores == rows[AT_THE_END, CORRECTED, "turn", subset].scores
    # asked when its original evidence is written: scored on that key only
    assert {key for mode, key, *_ in rows if mode == WHEN_DUE} == {ORIGINAL}
    assert context.dataset_info["questions left out"] == {ORIGINAL: 1, CORRECTED: 0}
    assert "2 questions changed" in context.dataset_info["corrections"]


def test_the_dialogue_table_and_csv_name_the_key_of_every_figure(keyed_run):
    from harness.experiments.dialogue import run as dialogue
    from harness.experiments.dialogue import table as dialogue_table
    from tests.results_factory import run_info

    spec, errata = keyed_run
    keyed = dialogue(RunContext(RunPlan(), {"mock": MockEncoder()}, spec, systems=("flat-numpy",), errata=errata), k=2)
    [table] = dialogue_table(RunResults(run=run_info(), dialogue=keyed))
    assert "key" in [c.header for c in table.columns] and "`corrected`" in table.caption
    assert {row["key"] for row in table.rows} == {ORIGINAL, CORRECTED}
    plain = dialogue(RunContext(RunPlan(), {"mock": MockEncoder()}, spec, systems=("flat-numpy",)), k=2)
    [table] = dialogue_table(RunResults(run=run_info(), dialogue=plain))
    assert "key" not in [c.header for c in table.columns]  # without corrections: one key, no column


METRIC = Metric("sessions", "session", "recall", 10, "in", "all-MiniLM-L6-v2")
CLAIM = FieldClaim("x-locomo", "x", "X: LoCoMo session R@10 60%", 0.60, "locomo", "LoCoMo", METRIC, "MiniLM", "src")


def test_a_claim_is_judged_on_the_original_key_with_the_corrected_reading_beside_it():
    from harness.experiments.field_claims import table as field_readings
    from tests.results_factory import run_info

    original = Reading("sessions", "locomo-dev", METRIC, 0.50, 0.47, 0.53, 1000)
    corrected = dataclasses.replace(original, value=0.60, low=0.57, high=0.63, key=CORRECTED)
    results = RunResults(run=dataclasses.replace(run_info(), dataset="locomo:dev"), field_claims=[corrected, original])
    verdict = CLAIM.evaluate(results)
    assert verdict.verdict == REFUTED  # the corrected reading holds the figure, but it was published on the original
    assert verdict.measured.startswith("0.500") and "on the corrected key: 0.600 [0.570, 0.630]" in verdict.measured
    [table] = field_readings(results)
    assert [row["key"] for row in table.rows] == [ORIGINAL, CORRECTED]  # the same figure on both keys, side by side
    assert "key" in [c.header for c in table.columns]
