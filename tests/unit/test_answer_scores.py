"""LoCoMo's LLM-free answer metrics, against values worked out by hand from their definitions."""

from __future__ import annotations

import math

import pytest

from harness.measure.answer_scores import bleu1, exact_match, multi_f1, normalise, score, token_f1


def test_normalisation_drops_commas_case_punctuation_and_articles():
    assert normalise("The cat, and A dog!  An owl.") == "cat dog owl"


def test_token_f1_counts_porter_stems():
    # "painted" and "painting" share the stem "paint": 2 of 3 answer tokens, 2 of 2 gold tokens
    assert token_f1("She painted sunsets", "painting sunsets") == pytest.approx(2 * (2 / 3) * 1 / (2 / 3 + 1))
    assert token_f1("Oslo", "Lisbon") == 0.0


def test_multi_hop_scores_each_gold_part_by_its_best_answer_part():
    assert multi_f1("piano, cello", "cello, piano") == 1.0
    assert multi_f1("cello", "cello, piano") == 0.5


def test_exact_match_is_the_same_set_of_tokens():
    assert exact_match("May 7, 2023", "7 May 2023") == 1.0
    assert exact_match("7 May", "7 May 2023") == 0.0


def test_bleu1_is_clipped_unigram_precision_times_the_brevity_penalty():
    assert bleu1("the the the", "the cat") == pytest.approx(1 / 3)  # clipped: one "the" counts, no penalty
    assert bleu1("cat", "the cat") == pytest.approx(math.exp(1 - 2 / 1))  # short: penalised
    assert bleu1("dog", "cat") == 0.0 and bleu1("", "cat") == 0.0


def test_each_category_is_scored_as_locomo_scores_it():
    assert score("cello", "cello, piano", 1).f1 == 0.5  # multi-hop: parts
    assert score("marine biology", "marine biology; oceans", 3).f1 == 1.0  # open-domain: before the ';'
    assert score("Not mentioned in the conversation.", "Rufus", 5).f1 == 1.0  # adversarial: a refusal scores
    assert score("Rufus", "Rufus", 5).f1 == 0.0
