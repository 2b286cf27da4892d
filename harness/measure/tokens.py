"""Context tokens: what a memory's hits cost the model that reads them, as MemScore and OmniMemEval report it
beside accuracy and latency. An answer found in ten long hits is not the one found in ten short ones.

A hit's text is counted by the run's encoder's own tokenizer where it has one (MiniLM's WordPiece), otherwise
by a stated rule (`WORD_RULE`). `within_budget` takes hits in rank order until a context budget is spent: the
context an agent with that budget would hand its model.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from reference.encoders import Encoder, SentenceTransformerEncoder

WORDS_PER_TOKEN = 0.75
"""A token is about three quarters of an English word (OpenAI's rule of thumb)."""
WORD_RULE = f"whitespace-separated words ÷ {WORDS_PER_TOKEN:g}, rounded up (about 4 tokens per 3 English words)"
BUDGETS = (500, 1_000, 2_000)
"""Context budgets (tokens) at which evidence recall is reported."""


@dataclass(frozen=True)
class TokenCounter:
    """How many tokens each text is, and how (`rule`, for the report)."""

    rule: str
    count: Callable[[Sequence[str]], list[int]]


def word_tokens(texts: Sequence[str]) -> list[int]:
    """`WORD_RULE`: for encoders without a tokenizer."""
    return [math.ceil(len(text.split()) / WORDS_PER_TOKEN) for text in texts]


def token_counter(encoder: Encoder) -> TokenCounter:
    """The encoder's own tokenizer where it has one, else `WORD_RULE`."""
    if isinstance(encoder, SentenceTransformerEncoder):
        return TokenCounter(
            "all-MiniLM-L6-v2's own WordPiece tokenizer, whole texts (the model reads the first 256 tokens)",
            encoder.count_tokens,
        )
    return TokenCounter(WORD_RULE, word_tokens)


def within_budget(ranked: Sequence[str], tokens: Sequence[int], budget: int) -> list[str]:
    """The hits taken in rank order until the budget is spent: the first that would overrun it ends the
    context (`tokens[i]` is `ranked[i]`'s)."""
    taken, spent = [], 0
    for hit, cost in zip(ranked, tokens):
        spent += cost
        if spent > budget:
            break
        taken.append(hit)
    return taken
