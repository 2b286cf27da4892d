"""The harness rejects answers that break the contract."""

import pytest

from harness.measure.checking import ContractViolation, check_documents, check_hits
from harness.protocol import Document, SearchHit

KNOWN = {"a", "b", "c"}


@pytest.mark.parametrize(
    ("hits", "k", "message"),
    [
        ([SearchHit("a", 1), SearchHit("b", 0.5), SearchHit("c", 0.1)], 2, "for k=2"),
        ([SearchHit("a", 1), SearchHit("a", 0.5)], 3, "twice"),
        ([SearchHit("zzz", 1)], 3, "unknown"),
        ([SearchHit("a", 0.1), SearchHit("b", 0.9)], 3, "not sorted"),
        ([SearchHit("a", float("nan"))], 3, "NaN"),
    ],
)
def test_each_violation_is_named(hits, k, message):
    with pytest.raises(ContractViolation, match=message):
        check_hits("broken", hits, k=k, known_ids=KNOWN)


def test_a_good_answer_passes_unchanged():
    hits = [SearchHit("b", 0.9), SearchHit("a", 0.9), SearchHit("c", -1.0)]
    assert check_hits("fine", hits, k=3, known_ids=KNOWN) == hits


def test_duplicate_input_ids_are_refused():
    with pytest.raises(ContractViolation):
        check_documents([Document("x", "one"), Document("x", "two")])
