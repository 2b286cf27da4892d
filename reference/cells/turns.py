"""What a dialogue turn's own form says about whether it answers a text query: who said it, and whether it asks.

The last stage of a text query (`search.py`, after context): a candidate whose text ends with a question mark
scores `MemoryConfig.asking_penalty` less (in a dialogue a question seldom holds the answer), and one written by a
speaker the query names (`MemoryConfig.speaker_key` in its metadata) scores `speaker_weight` more. A question
seldom answers one, yet a dense or lexical search ranks questions high for a question: a question matches a
question. A speaker's turns rise on their own: the evidence of a question about one person is mostly what that
person said. Both weights were chosen on three of the five LoCoMo dev conversations and checked on the other two
(`MemoryConfig`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .table import CellTable

_WORD = re.compile(r"\w+")


def asks(text: str) -> bool:
    """Whether `text` ends with a question mark (trailing blanks aside)."""
    return text.rstrip().endswith("?")


def speaker_word(metadata: Mapping[str, Any] | None, key: str) -> str:
    """The first word, lower-cased, of the speaker named in `metadata` under `key`: how a question names a
    speaker ("" when there is none, or it is not a string)."""
    speaker = metadata.get(key) if metadata else None
    found = _WORD.search(speaker.lower()) if isinstance(speaker, str) else None
    return "" if found is None else found.group()


def with_turn_form(
    rows: np.ndarray,
    scores: np.ndarray,
    table: CellTable,
    query_text: str,
    *,
    asking_penalty: float,
    speaker_weight: float,
) -> np.ndarray:
    """`scores` of the candidates `rows` less `asking_penalty` for each that asks and plus `speaker_weight` for
    each whose speaker the query names (by the first word of the speaker's name, in either case)."""
    adjusted = scores.astype(np.float64, copy=True)
    if asking_penalty:
        adjusted -= asking_penalty * table.asks[rows]
    if speaker_weight:
        named = [code for word in _WORD.findall(query_text) if (code := table.known_speaker(word.lower()))]
        if named:
            speaks = np.zeros(len(table.speaker_words), dtype=bool)
            speaks[named] = True
            adjusted += speaker_weight * speaks[table.speaker[rows]]
    return adjusted
