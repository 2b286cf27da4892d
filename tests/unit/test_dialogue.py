"""Dialogue-memory loaders on small fixtures written here in each format, and their typed errors."""

import json
from datetime import UTC, datetime

import pytest

from harness.data.beir import DatasetFormatError
from harness.data.dialogue import TurnFormat, load_dialogue
from harness.data.spec import DatasetSpec

LOCOMO_SAMPLE = {
    "sample_id": "conv-x",
    "conversation": {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a cat named Miso."},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Lovely!", "blip_caption": "a grey cat on a sofa"},
        ],
        "session_2_date_time": "10:00 am on 9 June, 2023",
        "session_2": [{"speaker": "Ana", "dia_id": "D2:1", "text": "Miso learned to open doors."}],
    },
    "qa": [
        {"question": "What is Ana's cat called?", "answer": "Miso", "evidence": ["D1:1"], "category": 4},
        {"question": "What did the cat learn?", "answer": "doors", "evidence": ["D2:1; D1:1"], "category": 1},
        {"question": "What is Ben's dog called?", "evidence": ["D1:2"], "category": 5, "adversarial_answer": "Rex"},
        {"question": "Unscorable", "answer": "x", "evidence": [], "category": 2},
    ],
}

LONGMEMEVAL = [
    {
        "question_id": "q1",
        "question_type": "single-session-user",
        "question": "Where did I travel?",
        "answer": "Lisbon",
        "haystack_session_ids": ["s1", "s2"],
        "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/21 (Sun) 10:00"],
        "haystack_sessions": [
            [
                {"role": "user", "content": "I flew to Lisbon.", "has_answer": True},
                {"role": "assistant", "content": "Nice"},
            ],
            [{"role": "user", "content": "Recipe ideas?"}],
        ],
        "answer_session_ids": ["s1"],
    },
    {
        "question_id": "q2_abs",
        "question_type": "single-session-user",
        "question": "Where did I ski?",
        "answer": "not mentioned",
        "haystack_session_ids": ["s3"],
        "haystack_sessions": [[{"role": "user", "content": "I like tea."}]],
        "answer_session_ids": [],
    },
]


@pytest.fixture
def locomo_file(tmp_path):
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([LOCOMO_SAMPLE]))
    return path


def test_locomo_turns_questions_evidence_and_categories(locomo_file):
    data = load_dialogue(DatasetSpec.parse(f"locomo:{locomo_file}"))
    [conversation] = data.conversations
    assert [d.id for d in conversation.docs] == ["D1:1", "D1:2", "D2:1"]
    assert conversation.docs[1].text == "Ben: Lovely! [shares a photo: a grey cat on a sofa]"
    assert len(conversation.queries) == 3  # the question without evidence cannot be scored
    assert conversation.relevant()[1] == ["D2:1", "D1:1"]  # "D2:1; D1:1" is two evidence turns
    assert set(conversation.conversation.category.values()) == {"single-hop", "multi-hop", "adversarial"}
    assert conversation.conversation.session_of == {"D1:1": "S1", "D1:2": "S1", "D2:1": "S2"}
    assert len(data.sha256) == 64


def test_turn_format_is_an_explicit_option(locomo_file):
    fmt = TurnFormat.parse("date,speaker")
    [conversation] = load_dialogue(DatasetSpec.parse(f"locomo:{locomo_file}"), fmt).conversations
    assert conversation.docs[1].text == "[1:56 pm on 8 May, 2023] Ben: Lovely!"
    assert load_dialogue(DatasetSpec.parse(f"locomo:{locomo_file}"), TurnFormat.parse("plain")).conversations[0].docs[
        0
    ].text == ("I adopted a cat named Miso.")
    with pytest.raises(ValueError, match="unknown turn format"):
        TurnFormat.parse("speaker,emoji")


def test_longmemeval_haystacks_with_marked_evidence_and_abstention(tmp_path):
    path = tmp_path / "longmemeval_s.json"
    path.write_text(json.dumps(LONGMEMEVAL))
    first, abstention = load_dialogue(DatasetSpec.parse(f"longmemeval:{path}")).conversations
    assert first.relevant() == [["s1#0"]] and first.docs[0].text == "user: I flew to Lisbon."
    assert abstention.conversation.category == {"q2_abs": "single-session-user-abstention"}
    assert abstention.relevant() == [[]]


def test_longmemeval_knowledge_updates_have_their_versions_by_session_date(tmp_path):
    update = {
        "question_id": "q3",
        "question_type": "knowledge-update",
        "question": "Where do I live now?",
        "question_date": "2023/06/01 (Thu) 09:00",
        "haystack_session_ids": ["new", "other", "old"],
        "haystack_dates": ["2023/05/28 (Sun) 10:00", "2023/05/01 (Mon) 10:00", "2023/04/02 (Sun) 10:00"],
        "haystack_sessions": [
            [{"role": "user", "content": "I moved to Porto.", "has_answer": True}],
            [{"role": "user", "content": "Any films to watch?"}],
            [
                {"role": "assistant", "content": "Hi"},
                {"role": "user", "content": "I live in Lisbon.", "has_answer": True},
            ],
        ],
        "answer_session_ids": ["new", "old"],
    }
    path = tmp_path / "longmemeval_s.json"
    path.write_text(json.dumps([*LONGMEMEVAL, update]))
    first, _, changed = load_dialogue(DatasetSpec.parse(f"longmemeval:{path}")).conversations
    assert changed.conversation.versions == {"q3": (("old#1",), ("new#0",))}
    assert changed.conversation.asked_at == datetime(2023, 6, 1, 9, 0, tzinfo=UTC).timestamp()
    assert changed.docs[0].metadata["timestamp"] == datetime(2023, 5, 28, 10, 0, tzinfo=UTC).timestamp()
    assert first.conversation.versions == {}  # evidence in one session, and not a knowledge update


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not JSON"),
        (json.dumps([{"qa": [], "session_1": [{"speaker": "A", "text": "hi"}]}]), r"sample 0 session_1 turn 0"),
        (json.dumps([{"conversation": {}}]), "sample 0: a LoCoMo sample"),
        (json.dumps([{"qa": [{"evidence": []}], "session_1": []}]), "qa 0"),
    ],
)
def test_a_malformed_locomo_file_names_the_file_and_the_record(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(DatasetFormatError, match=message) as error:
        load_dialogue(DatasetSpec.parse(f"locomo:{path}"))
    assert str(path) in str(error.value)


def test_missing_files_and_unknown_kinds_are_typed_errors(tmp_path):
    with pytest.raises(DatasetFormatError, match="no such file"):
        load_dialogue(DatasetSpec.parse(f"locomo:{tmp_path / 'missing.json'}"))
    with pytest.raises(DatasetFormatError, match="locomo:FILE or longmemeval:FILE"):
        load_dialogue(DatasetSpec.parse("beir:somewhere"))
    path = tmp_path / "lme.json"
    path.write_text(json.dumps([{"question_id": "q"}]))
    with pytest.raises(DatasetFormatError, match="question 0"):
        load_dialogue(DatasetSpec.parse(f"longmemeval:{path}"))


def test_session_level_is_left_out_where_k_reaches_the_sessions_and_turn_level_refuses(locomo_file):
    from harness.experiments.definition import RunContext
    from harness.experiments.dialogue import run as dialogue
    from harness.measure.metrics import CutoffError
    from harness.measure.plan import RunPlan
    from reference.encoders import MockEncoder

    dataset = DatasetSpec.parse(f"locomo:{locomo_file}")
    context = RunContext(RunPlan(), {"mock": MockEncoder()}, dataset, systems=("flat-numpy",))
    rows = dialogue(context, k=2)
    session = [r for r in rows if r.granularity.startswith("session")]
    assert session and all("1 haystacks of ≤ 2 sessions left out" in r.granularity for r in session)
    assert all(r.scores.queries == 0 for r in session)
    turn = next(r for r in rows if r.granularity == "turn" and r.subset == "all questions")
    assert turn.scores.queries == 3
    with pytest.raises(CutoffError, match="k = 3 is not below the 3 turns"):
        dialogue(context, k=3)


@pytest.mark.parametrize(
    ("text", "kind", "location", "dialogue"),
    [
        ("locomo:data/locomo10.json", "locomo", "data/locomo10.json", True),
        ("longmemeval:lm.json", "longmemeval", "lm.json", True),
        ("beam:chats", "beam", "chats", False),
        ("datasets/scifact", "beir", "datasets/scifact", False),
        ("C:/beir/scifact", "beir", "C:/beir/scifact", False),
    ],
)
def test_a_dataset_spec_is_parsed_once_into_its_kind_and_location(text, kind, location, dialogue):
    spec = DatasetSpec.parse(text)
    assert (spec.kind, str(spec.location), spec.dialogue, str(spec)) == (kind, location, dialogue, text)


def test_a_prefixed_dataset_without_a_path_is_refused():
    with pytest.raises(DatasetFormatError, match="locomo:PATH"):
        DatasetSpec.parse("locomo:")


def test_sessions_are_also_ranked_by_their_best_turn_and_every_row_counts_its_hits_tokens(tmp_path):
    from harness.experiments.definition import RunContext
    from harness.experiments.dialogue import run as dialogue
    from harness.measure.plan import RunPlan
    from harness.measure.tokens import WORD_RULE, word_tokens
    from reference.encoders import MockEncoder

    sessions = {
        f"session_{n}": [
            {"speaker": "Ana", "dia_id": f"D{n}:1", "text": f"Day {n}: I planted tree {n}."},
            {"speaker": "Ben", "dia_id": f"D{n}:2", "text": "Nice one."},
        ]
        for n in range(1, 15)
    }
    qa = [{"question": "Which trees did Ana plant?", "evidence": [f"D{n}:1" for n in range(1, 15)], "category": 1}]
    path = tmp_path / "trees.json"
    path.write_text(json.dumps({"sample_id": "trees", "conversation": sessions, "qa": qa}))
    dataset = DatasetSpec.parse(f"locomo:{path}")
    context = RunContext(RunPlan(), {"mock": MockEncoder()}, dataset, systems=("flat-numpy",))
    rows = {(r.mode, r.granularity): r for r in dialogue(context, k=10) if r.subset == "all questions"}
    assert ("bulk", "session (ranked)") in rows and ("online: at the end", "session (ranked)") not in rows
    # ten turns name at most ten sessions; ranked by their best turn, the first ten sessions are read deeper
    assert rows["bulk", "session (ranked)"].scores.recall == pytest.approx(10 / 14)
    assert rows["bulk", "session"].scores.recall <= rows["bulk", "session (ranked)"].scores.recall
    turns = word_tokens([doc.text for doc in load_dialogue(dataset, TurnFormat()).conversations[0].docs])
    assert 10 * min(turns) <= rows["bulk", "turn"].tokens_at_10 <= 10 * max(turns)  # ten hits, by the word rule
    assert context.dataset_info["tokens"] == WORD_RULE  # the mock encoder has no tokenizer
