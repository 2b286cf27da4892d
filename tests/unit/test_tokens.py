"""Context tokens: the counting rule, the budget, and the dialogue table's tokens and budgeted recall."""

import pytest

from harness.data.spec import DatasetSpec
from harness.experiments.definition import RunContext
from harness.experiments.dialogue import run as dialogue
from harness.measure.plan import RunPlan
from harness.measure.tokens import BUDGETS, WORD_RULE, token_counter, within_budget, word_tokens
from reference.encoders import MockEncoder
from tests.unit.test_dialogue import locomo_file  # noqa: F401  (a fixture)


def test_the_word_rule_counts_four_tokens_for_three_words():
    assert word_tokens(["one two three", "", "a b c d"]) == [4, 0, 6]
    assert token_counter(MockEncoder()).rule == WORD_RULE  # an encoder without a tokenizer


def test_hits_are_taken_in_rank_order_until_the_budget_is_spent():
    ranked, tokens = ["a", "b", "c", "d"], [300, 150, 100, 10]
    assert within_budget(ranked, tokens, 500) == ["a", "b"]  # c would overrun it: the context ends there
    assert within_budget(ranked, tokens, 1_000) == ranked
    assert within_budget(ranked, tokens, 100) == []


def test_the_dialogue_table_counts_each_answers_tokens_and_recall_within_each_budget(locomo_file):  # noqa: F811
    context = RunContext(
        RunPlan(), {"mock": MockEncoder()}, DatasetSpec.parse(f"locomo:{locomo_file}"), ("flat-numpy",)
    )
    rows = dialogue(context, k=2)
    assert context.dataset_info["tokens"] == WORD_RULE
    turns = [r for r in rows if r.granularity == "turn" and r.subset == "answerable"]
    bulk = next(r for r in turns if r.mode == "bulk")
    # turns of 6, 7 and 11 words as rendered (8, 10 and 15 tokens), two of them in each answer
    assert 18 <= bulk.tokens_at_10 <= 25
    # every turn fits in 500 tokens, so every evidence turn is in each answer's context
    assert bulk.budget_recall == dict.fromkeys(BUDGETS, 1.0)
    online = [r for r in turns if r.mode != "bulk"]
    assert online and all(r.tokens_at_10 > 0 and r.budget_recall == {} for r in online)


@pytest.mark.minilm
def test_minilm_counts_its_own_tokens_whole():
    from reference.encoders import SentenceTransformerEncoder

    counter = token_counter(SentenceTransformerEncoder())
    assert "MiniLM" in counter.rule
    short, long = counter.count(["Caroline adopted a cat.", "word " * 400])
    assert 4 <= short <= 8 and long == 400  # not cut at the model's 256
