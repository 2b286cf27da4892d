"""Conflict judges: the offline judge's rules, and the Ollama judge through the real client."""

import json

import pytest

from reference.judges import JudgeError, OfflineJudge, OllamaJudge, Statement


def statements(*texts: str) -> list[Statement]:
    return [Statement(f"s{i}", text, float(i)) for i, text in enumerate(texts)]


@pytest.mark.parametrize(
    ("first", "second", "contradict"),
    [
        ("Ana Silva lives in Lisbon.", "Ana Silva lives in Porto.", True),
        ("Ana Silva lives in Lisbon.", "Ana Silva does not live in Lisbon.", True),
        ("Ana Silva lived in Paris.", "Ana Silva lives in Lisbon.", False),
        ("Ana Silva likes tea.", "Ana Silva likes coffee.", False),
        ("Ana Silva is 34 years old.", "Ana Silva is 35 years old.", True),
        ("Ana Silva was born on May 1, 1990.", "Ana Silva was born on 1990-05-01.", False),
        ("Ana Silva was born on May 1, 1990.", "Ana Silva was born on 1991-05-01.", True),
        ("The budget of Project Kite is 4,000 dollars.", "The budget of Project Kite is 4000 dollars.", False),
        ("Ana Silva's email address is a@x.org.", "Ana Silva's email address is b@x.org.", True),
        ("Ana Silva is a nurse.", "Ana Silva is a mother of three.", False),
        ("Ana Silva lives in Lisbon.", "Rui Costa lives in Porto.", False),
        ("Ana Silva lives in Lisbon.", "Ana Silva is based in Porto.", True),
        ("Ana Silva moved to Porto.", "Ana Silva lived in Lisbon.", False),
        ("Ana Silva visited Lisbon.", "Ana Silva visited Porto.", False),
    ],
)
def test_offline_rules(first, second, contradict):
    assert bool(OfflineJudge().judge(statements(first, second))) is contradict


@pytest.mark.parametrize(
    ("first", "second", "contradict"),
    [
        ("Ana: I live in Lisbon these days.", "Ana: I just moved to Porto!", True),
        ("I live in Lisbon.", "Big news: I relocated to Porto.", True),
        ("My email is a@x.org if you need it.", "My email is b@x.org.", True),
        ("I'm a nurse, so my hours are long.", "I changed careers: I'm a pilot now.", True),
        ("I work as a nurse.", "I'm a pilot.", True),
        ("My favourite band is Radiohead.", "Daft Punk is my favourite band now.", True),
        ("I live in Lisbon.", "My cousin Rui lives in Porto.", False),
        ("I went hiking.", "I went swimming.", False),
        ("I'm excited to see the show.", "I'm excited to catch up.", False),
        ("It was a blast.", "It was a great day.", False),
    ],
)
def test_a_speakers_first_person_statements_are_read_as_theirs(first, second, contradict):
    found = OfflineJudge().judge([Statement("a", first, 1.0, "Ana"), Statement("b", second, 2.0, "Ana")])
    assert bool(found) is contradict


def test_first_person_statements_of_two_speakers_never_conflict():
    found = OfflineJudge().judge(
        [Statement("a", "I live in Lisbon.", 1.0, "Ana"), Statement("b", "I live in Porto.", 2.0, "Ben")]
    )
    assert found == []


def test_conflicts_name_the_older_statement_first_and_each_pair_once():
    found = OfflineJudge().judge(
        [Statement("new", "Ana Silva lives in Porto.", 9.0), Statement("old", "Ana Silva lives in Lisbon.", 1.0)]
    )
    assert [(c.first, c.second, c.judge) for c in found] == [("old", "new", "offline")]


def test_ollama_judge_reads_json_and_retries_invalid_json_once(ollama_standin):
    answers = iter(["this is not JSON", json.dumps({"conflicts": [{"a": 2, "b": 1, "reason": "two cities"}]})])
    ollama_standin.brain = lambda messages, tools: {"content": next(answers)}
    judge = OllamaJudge(host=ollama_standin.url, timeout=5)
    [conflict] = judge.judge(statements("Ana lives in Lisbon.", "Ana lives in Porto."))
    assert (conflict.first, conflict.second, conflict.reason) == ("s0", "s1", "two cities")
    assert len(ollama_standin.chats) == 2 and ollama_standin.chats[0]["format"] == "json"
    assert "not valid" in ollama_standin.chats[1]["messages"][-1]["content"]


def test_ollama_judge_gives_up_after_one_retry_with_a_judge_error(ollama_standin):
    ollama_standin.brain = lambda messages, tools: {"content": json.dumps({"conflicts": [{"a": 7, "b": 1}]})}
    with pytest.raises(JudgeError, match="after a retry"):
        OllamaJudge(host=ollama_standin.url, timeout=5).judge(statements("a b", "c d"))
    assert len(ollama_standin.chats) == 2


def test_unreachable_ollama_judge_is_a_judge_error(dead_port):
    with pytest.raises(JudgeError, match="ollama serve"):
        OllamaJudge(host=f"http://127.0.0.1:{dead_port}", timeout=2).judge(statements("a b", "c d"))
