"""Turn form: a text query ranks a candidate that asks a question lower, one by a speaker it names higher."""

import numpy as np
import pytest

from reference import CellularMemory, InvalidInputError, MemoryConfig
from reference.cells.table import CellBatch, CellTable
from reference.cells.turns import asks, speaker_word
from reference.encoders import MockEncoder


class Blind(MockEncoder):
    """Every text gets the same vector: only words and the turn form can rank."""

    def encode(self, texts):
        return np.ones((len(texts), self.dim), dtype=np.float32) / np.sqrt(self.dim)


@pytest.mark.parametrize(
    ("text", "asking"),
    [("Where did you go?", True), ("where next ?  \n", True), ("I went to Lisbon.", False), ("Why? I forget.", False)],
)
def test_a_turn_asks_when_it_ends_with_a_question_mark(text, asking):
    assert asks(text) is asking


@pytest.mark.parametrize(
    ("metadata", "word"),
    [({"speaker": "Ann Lee"}, "ann"), ({"speaker": " BOB: "}, "bob"), ({"speaker": ["Ann"]}, ""), ({}, ""), (None, "")],
)
def test_a_speaker_is_known_by_the_first_word_of_the_name(metadata, word):
    assert speaker_word(metadata, "speaker") == word


def test_scores_move_by_the_penalty_and_the_weight_only():
    texts = ["Did Ann paint the lake?", "Ann painted a lake.", "Bob painted a horse."]
    speakers = [{"speaker": "Bob"}, {"speaker": "Ann Lee"}, {"speaker": "Bob"}]
    with CellularMemory(encoder=MockEncoder(32)) as memory:
        ids = memory.add(texts, metadata=speakers)
        formed = {h.id: h.score for h in memory.search("what has ann painted", k=3)}
        memory.set_search_options(asking_penalty=0, speaker_weight=0)
        plain = {h.id: h.score for h in memory.search("what has ann painted", k=3)}
    assert [formed[i] - plain[i] for i in ids] == pytest.approx([-0.15, 0.1, 0.0])


def test_a_statement_outranks_the_question_it_answers():
    with CellularMemory(encoder=Blind(32)) as memory:
        question, answer = memory.add(["which city did you visit in May?", "in May I visited the city of Lisbon"])
        assert [h.id for h in memory.search("which city did you visit in May", k=2)] == [answer, question]
        memory.set_search_options(asking_penalty=0)  # words alone put the question first
        assert memory.search("which city did you visit in May", k=1)[0].id == question


def test_the_speaker_a_query_names_comes_first():
    with CellularMemory(encoder=Blind(32)) as memory:
        ann, bob = memory.add(
            ["I went camping in the hills", "I went camping by the sea"],
            metadata=[{"speaker": "Ann"}, {"speaker": "Bob"}],
        )
        assert memory.search("where has Bob gone camping", k=1)[0].id == bob
        assert memory.search("where has Ann gone camping", k=1)[0].id == ann
    with CellularMemory(encoder=Blind(32), config=MemoryConfig(speaker_key="who")) as memory:
        memory.add(["I went camping in the hills", "I went camping by the sea"], metadata=[{"speaker": "Ann"}] * 2)
        ann = {h.id: h.score for h in memory.search("where has Ann gone camping", k=2)}  # no cell has "who"
        assert ann == {h.id: h.score for h in memory.search("where has Bob gone camping", k=2)}


def test_vector_queries_are_untouched_by_the_turn_form():
    with CellularMemory(encoder=MockEncoder(32)) as memory:
        memory.add(["did Ann go?"], metadata=[{"speaker": "Ann"}])
        [hit] = memory.search(MockEncoder(32).encode(["did Ann go?"])[0], k=1)
        assert hit.score == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize(
    "setting", [{"asking_penalty": -0.1}, {"speaker_weight": -1}, {"speaker_key": ""}, {"speaker_key": 3}]
)
def test_bad_turn_form_settings_are_refused(setting):
    with pytest.raises(InvalidInputError):
        MemoryConfig(**setting)


def test_the_turn_form_is_rebuilt_on_open(tmp_path):
    texts, speakers = ["where did Bob go?", "Bob went to Porto"], [{"speaker": "Bob"}, {"speaker": "Ann"}]
    with CellularMemory(path=tmp_path / "m", encoder=MockEncoder(32)) as memory:
        memory.add(texts, metadata=speakers)
        before = [(h.id, h.score) for h in memory.search("where did Bob go", k=2)]
    with CellularMemory(path=tmp_path / "m", encoder=MockEncoder(32)) as memory:
        assert [(h.id, h.score) for h in memory.search("where did Bob go", k=2)] == before
        memory.check_invariants()


def test_a_wrong_turn_form_column_is_named():
    table = CellTable(4, keep_vectors=False, speaker_key="speaker")
    rows = table.append(
        CellBatch(
            ids=["a", "b"],
            texts=["where did Bob go?", "Bob went to Porto"],
            vectors=np.eye(2, 4, dtype=np.float32),
            groups=np.zeros(2, dtype=np.int64),
            kinds=["episodic"] * 2,
            importance=np.zeros(2),
            timestamps=np.zeros(2),
            access=np.zeros(2, dtype=np.int64),
            metadata=[{"speaker": "Bob"}, {"speaker": "Ann"}],
            conflicts=[[], []],
            episodes=["", ""],
            scopes=["", ""],
            histories=[[], []],
        )
    )
    assert table.turn_form_problems(rows) == [] and table.asks[rows].tolist() == [True, False]
    table.asks[rows] = False
    table.speaker[rows] = table.speaker[rows][::-1]
    assert table.turn_form_problems(rows) == [
        "a cell's question mark is recorded wrongly",
        "a cell's speaker is recorded wrongly",
    ]


def test_the_speaker_key_is_fixed_when_the_memory_is_made():
    with CellularMemory(encoder=MockEncoder(32)) as memory:
        with pytest.raises(InvalidInputError):
            memory.set_search_options(speaker_key="who")
        memory.set_search_options(asking_penalty=0.3, speaker_weight=0)
        assert (memory.config.asking_penalty, memory.config.speaker_weight) == (0.3, 0)
