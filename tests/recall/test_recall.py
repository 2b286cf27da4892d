"""Recall suites: every system × encoder, in parallel under pytest-xdist (no timing here).

Ollama runs when a server answers at OLLAMA_HOST (else it is skipped with the reason).
"""

from __future__ import annotations

import functools

import pytest

from harness.data.encoding import encode_evalset
from harness.data.generated import needles_evalset, vectors_evalset
from harness.measure.timing import measure
from harness.systems.registry import SYSTEMS
from reference.encoders import make_encoder
from reference.encoders.ollama import OllamaEncoder
from tests.extras import needs

NEEDLE_SEEDS = (0, 1, 2)


ENCODERS = ["mock", pytest.param("minilm", marks=pytest.mark.minilm), "ollama"]


@functools.cache
def encoder(name: str):
    """The encoder by name; Ollama is probed here, when a test needs it, never at collection."""
    if name == "ollama":
        probe = OllamaEncoder(timeout=2)
        if not probe.reachable():
            pytest.skip(f"no Ollama with nomic-embed-text at {probe.host}")
    return make_encoder(name)


@functools.cache
def vectors():
    return vectors_evalset(10_000, queries=100, seed=42)


RANKS_BY_WORDS = {"bm25", "hybrid-rrf"}
"""Lexical and fused rankings are not approximations of exact vector search."""


@pytest.mark.parametrize("system", sorted(set(SYSTEMS) - RANKS_BY_WORDS))
def test_recall_against_exact_search(system):
    needs(system)
    [result] = measure(system, vectors(), encoder="vectors")
    assert result.queries == 100
    floor = 1.0 if system == "flat-numpy" else 0.95
    assert result.recall_at_10 >= floor, f"{system}: recall@10 {result.recall_at_10:.3f}"


@pytest.mark.parametrize("encoder_name", ENCODERS)
@pytest.mark.parametrize("system", sorted(SYSTEMS))
def test_needles_answers_are_valid_and_found(system, encoder_name):
    needs(system)
    found, total = 0, 0
    for seed in NEEDLE_SEEDS:
        evalset = encode_evalset(needles_evalset(200, 5, seed=seed), encoder(encoder_name))
        [result] = measure(system, evalset, encoder=encoder_name)  # every answer is contract-checked
        found, total = found + result.found_at[3], total + result.queries
    if system.startswith("reference"):
        assert found == total, f"{system} with {encoder_name}: {found}/{total} needles in the top 3"
    else:
        assert found >= 0.8 * total, f"{system} with {encoder_name}: {found}/{total}"
