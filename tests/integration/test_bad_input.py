"""Bad input, as a hostile caller sends it, with MiniLM and the mock encoder, in memory and persisted: each
call raises a typed `MagneticError` and changes nothing (the cells, `stats()`, the invariants)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from reference import CellularMemory, MagneticError
from reference.encoders import MockEncoder

SURROGATE = "\ud800"
BAD_CALLS = {
    "context is a number": lambda m: m.add("a note", context=5),
    "one context for two texts": lambda m: m.add(["a", "b"], context=["x"]),
    "a lone surrogate in text": lambda m: m.add(f"half a pair {SURROGATE} here"),
    "a lone surrogate in metadata": lambda m: m.add("a note", metadata={"k": SURROGATE}),
    "a lone surrogate in context": lambda m: m.add("a note", context=SURROGATE),
    "a lone surrogate in an episode": lambda m: m.add("a note", episode=SURROGATE),
    "a lone surrogate in an id": lambda m: m.add("a note", ids=[SURROGATE]),
    "a lone surrogate in a query": lambda m: m.search(SURROGATE + " what", k=3),
    "an episode that is a number": lambda m: m.add("a note", episode=5),
    "labels that are a number": lambda m: m.consolidate(labels=5),
    "a sleep interval that is text": lambda m: m.start_sleep("1"),
    "a sleep interval of nan": lambda m: m.start_sleep(math.nan),
    "a sleep interval of inf": lambda m: m.start_sleep(math.inf),
    "a negative sleep interval": lambda m: m.start_sleep(-1),
    "a NaN vector": lambda m: m.add("a note", vectors=np.full((1, m.dim), np.nan)),
    "a vector of the wrong dimension": lambda m: m.add("a note", vectors=np.ones((1, m.dim + 1))),
    "an unknown id": lambda m: m.delete(["no-such-id"]),
    "a NUL in text": lambda m: m.add("a\x00b"),
    "k of zero": lambda m: m.search("what", k=0),
    "an empty query": lambda m: m.search("   ", k=3),
}


@pytest.fixture(scope="module", params=["mock", "minilm"])
def encoder(request):
    if request.param == "mock":
        return MockEncoder(384)
    pytest.importorskip("sentence_transformers")
    from reference.encoders import SentenceTransformerEncoder

    return SentenceTransformerEncoder()


@pytest.fixture(params=["in memory", "persisted"])
def memory(request, encoder, tmp_path):
    path = str(tmp_path / "store") if request.param == "persisted" else None
    with CellularMemory(path=path, encoder=encoder) as opened:
        opened.add(["Maria Lopez lives in Lisbon", "the build broke on Friday"], episode="start")
        yield opened


def snapshot(memory: CellularMemory):
    return memory.stats(), [(i, memory.get(i).text, memory.get(i).episode) for i in memory.ids()]


@pytest.mark.parametrize("call", list(BAD_CALLS), ids=list(BAD_CALLS))
def test_bad_input_is_a_typed_error_and_changes_nothing(memory, call):
    before = snapshot(memory)
    with pytest.raises(MagneticError):
        BAD_CALLS[call](memory)
    after = snapshot(memory)
    assert after[1] == before[1] and after[0].cells == before[0].cells and after[0].groups == before[0].groups
    memory.check_invariants()
    assert not memory.sleeping  # no sleep thread was started either
