"""Precision and recall of each conflict judge on the labelled faker contradiction set."""

import pytest

from harness.generators.contradictions import contradiction_pairs
from harness.judging import score_judge
from reference.judges import OfflineJudge, OllamaJudge
from reference.judges.base import JudgeError
from reference.ollama_connection import OllamaConnection


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_offline_judge_precision_and_recall(seed):
    score = score_judge(OfflineJudge(), contradiction_pairs(30, seed=seed))
    print(
        f"offline judge, seed {seed}: precision {score.precision:.3f}, recall {score.recall:.3f}, "
        f"missed {score.missed_by_kind}, false alarms {score.false_alarms_by_kind}"
    )
    assert score.precision >= 0.9
    assert score.recall >= 0.8


def _no_ollama_reason() -> str | None:
    connection = OllamaConnection("llama3.2", host=None, timeout=2.0)
    return None if connection.reachable() else f"no Ollama server at {connection.host}"


@pytest.mark.skipif(bool(_no_ollama_reason()), reason=str(_no_ollama_reason()))
def test_ollama_judge_precision_and_recall():
    judge = OllamaJudge(timeout=60)
    try:
        score = score_judge(judge, contradiction_pairs(5, seed=0))
    except JudgeError as error:
        pytest.skip(f"the judge model is not available: {error}")
    print(f"{judge.name}: precision {score.precision:.3f}, recall {score.recall:.3f}, errors {score.errors}")
    assert score.true_positives + score.false_negatives > 0
