"""Precision and recall of each conflict judge on the labelled faker contradiction set."""

import pytest

from harness.data.generators.contradictions import contradiction_pairs
from harness.measure.judging import score_judge
from reference.common.ollama_connection import OllamaConnection
from reference.judges import OfflineJudge, OllamaJudge
from reference.judges.base import JudgeError


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_offline_judge_precision_and_recall(seed):
    score = score_judge(OfflineJudge(), contradiction_pairs(30, seed=seed))
    print(
        f"offline judge, seed {seed}: precision {score.precision:.3f}, recall {score.recall:.3f}, "
        f"missed {score.missed_by_kind}, false alarms {score.false_alarms_by_kind}"
    )
    assert score.precision >= 0.9
    assert score.recall >= 0.8


@pytest.fixture
def ollama_judge() -> OllamaJudge:
    """The LLM judge, when an Ollama server answers (probed when the test runs, not at collection)."""
    connection = OllamaConnection("llama3.2", host=None, timeout=2.0)
    if not connection.reachable():
        pytest.skip(f"no Ollama server at {connection.host}")
    return OllamaJudge(timeout=60)


def test_ollama_judge_precision_and_recall(ollama_judge):
    try:
        score = score_judge(ollama_judge, contradiction_pairs(5, seed=0))
    except JudgeError as error:
        pytest.skip(f"the judge model is not available: {error}")
    print(f"{ollama_judge.name}: precision {score.precision:.3f}, recall {score.recall:.3f}, errors {score.errors}")
    assert score.precision >= 0.5 and score.recall >= 0.5  # a working model beats chance on labelled pairs
