"""LoCoMo's corrections: matched to questions in one conversation's file, a folder and the canonical file; an id
that matches no question is refused with the reason; the corrected key reaches the retrieval sets."""

from __future__ import annotations

import pytest

from harness.data.dialogue import load_dialogue, locomo_questions
from harness.data.errata import ErrataError, apply_errata, load_errata
from harness.data.spec import DatasetSpec
from tests.locomo_fixture import audit_id, conversation, write


def corrections(tmp_path, items, name="errors.json"):
    return load_errata(write(tmp_path / name, items))


def fix(position, index, question, **corrected):
    return {"question_id": audit_id(position, index), "question": question, "error_type": "WRONG", **corrected}


MOVE = "Where did Ann move to?"
DOG = "What is the name of Ben's dog?"


def test_a_single_conversation_file_takes_the_corrections_of_its_conversation(tmp_path):
    path = write(tmp_path / "a.json", conversation("conv-a", city="Lisbon"))
    errata = corrections(
        tmp_path,
        [
            fix(4, 4, MOVE, correct_answer="Porto", correct_evidence=["D1:1", "D2:1"]),
            fix(4, 3, DOG, correct_answer="Rufus", correct_evidence=["D2:2"]),
            fix(6, 3, "What is Ben's hobby?", correct_answer="golf"),  # another conversation's: not in this file
        ],
    )
    corrected = apply_errata(locomo_questions(DatasetSpec.parse(f"locomo:{path}")), errata)
    by_id = {q.id: q for q in corrected.questions}
    assert (by_id["conv-a/q4"].answer, by_id["conv-a/q4"].evidence) == ("Porto", ("D1:1", "D2:1"))
    assert by_id["conv-a/q3"].evidence == ("D2:2",) and by_id["conv-a/q3"].answer == "Rufus"
    assert (corrected.changed, corrected.answers_changed, corrected.evidence_changed) == (2, 1, 2)
    assert corrected.not_loaded == 1  # locomo_6 matched nothing of this file: counted, not applied


def test_the_canonical_file_tells_apart_conversations_that_ask_the_same_question(tmp_path):
    canonical = write(
        tmp_path / "locomo10.json", [conversation("conv-a", city="Lisbon"), conversation("conv-b", city="Oslo")]
    )
    errata = corrections(tmp_path, [fix(1, 4, MOVE, correct_answer="Bergen")])
    corrected = apply_errata(locomo_questions(DatasetSpec.parse(f"locomo:{canonical}")), errata)
    answers = {q.id: q.answer for q in corrected.questions if q.index == 4}
    assert answers == {"conv-a/q4": "Lisbon", "conv-b/q4": "Bergen"}
    stale = corrections(tmp_path, [fix(1, 4, "Where did Ann live?", correct_answer="Bergen")], "stale.json")
    with pytest.raises(
        ErrataError, match=r"matches no question of conv-b: its question 4 asks 'Where did Ann move to\?'"
    ):
        apply_errata(locomo_questions(DatasetSpec.parse(f"locomo:{canonical}")), stale)


def test_a_folder_of_conversations_matches_by_text(tmp_path):
    write(tmp_path / "data" / "a.json", conversation("conv-a", city="Lisbon"))
    write(tmp_path / "data" / "b.json", conversation("conv-b", city="Oslo"))
    errata = corrections(
        tmp_path,
        [fix(0, 0, "What instruments does Ann play?", correct_answer="cello")],
    )
    with pytest.raises(ErrataError, match="matches 2 questions"):  # both conversations ask it, and no position tells
        apply_errata(locomo_questions(DatasetSpec.parse(f"locomo:{tmp_path / 'data'}")), errata)


def test_a_correction_whose_question_is_not_there_is_refused_with_the_reason(tmp_path):
    path = write(tmp_path / "a.json", conversation())
    errata = corrections(
        tmp_path,
        [fix(0, 3, DOG, correct_answer="Rex"), fix(0, 2, "What did Ann paint?", correct_answer="a lake")],
    )
    questions = locomo_questions(DatasetSpec.parse(f"locomo:{path}"))
    with pytest.raises(
        ErrataError,
        match=r"locomo_0_qa2 \('What did Ann paint\?'\) matches no question of conv-a: "
        r"its question 2 asks 'What might Ann study\?'",
    ):
        apply_errata(questions, errata)
    with pytest.raises(ErrataError, match="none of its 1 ids matches"):
        apply_errata(questions, corrections(tmp_path, [fix(0, 2, "What did Ann paint?", correct_answer="x")], "b.json"))


def test_two_conversations_of_the_audit_cannot_both_be_one_loaded_conversation(tmp_path):
    path = write(tmp_path / "a.json", conversation())
    errata = corrections(tmp_path, [fix(4, 3, DOG, correct_answer="Rex"), fix(6, 4, MOVE, correct_answer="Porto")])
    with pytest.raises(ErrataError, match="ids of conversations 4, 6 all match questions of conv-a"):
        apply_errata(locomo_questions(DatasetSpec.parse(f"locomo:{path}")), errata)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "not JSON"),
        ('{"a": 1}', "expected a JSON list"),
        ('[{"question": "q"}]', "expected an object with 'question_id'"),
        ('[{"question_id": "locomo_0_qa1"}]', "neither 'correct_answer' nor 'correct_evidence'"),
        ('[{"question_id": "locomo_0_qa1", "correct_evidence": "D1:1"}]', "'correct_evidence' is a list"),
    ],
)
def test_a_malformed_corrections_file_is_a_typed_error(tmp_path, content, message):
    path = tmp_path / "errors.json"
    path.write_text(content)
    with pytest.raises(ErrataError, match=message):
        load_errata(path)


def test_the_corrected_evidence_reaches_the_retrieval_sets(tmp_path):
    path = write(tmp_path / "a.json", conversation())
    spec = DatasetSpec.parse(f"locomo:{path}")
    corrected = apply_errata(locomo_questions(spec), corrections(tmp_path, [fix(0, 3, DOG, correct_evidence=["D2:2"])]))
    [original] = load_dialogue(spec).conversations
    [fixed] = load_dialogue(spec, evidence=corrected.evidence).conversations
    assert original.qrels["conv-a/q3"] == {"D1:2": 1.0}
    assert fixed.qrels["conv-a/q3"] == {"D2:2": 1.0}
    assert {q: r for q, r in fixed.qrels.items() if q != "conv-a/q3"} == {
        q: r for q, r in original.qrels.items() if q != "conv-a/q3"
    }
