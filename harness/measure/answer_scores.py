"""LoCoMo's answer metrics, without any LLM: token F1, BLEU-1 and exact match of an answer against the key.

Reimplemented from the definitions of LoCoMo's evaluation (snap-research/locomo, `task_eval/evaluation.py`):
an answer and its gold answer are normalised (commas dropped, lower case, punctuation removed, the words
`a an the and` removed, whitespace collapsed) and F1 is taken over Porter stems of their tokens. Per category, as
LoCoMo scores them: multi-hop (1) answers are split at commas and each gold part takes its best answer part (the
mean over gold parts); open-domain (3) gold answers keep their part before the first `;`; adversarial (5) questions
have no answer in the dialogue, so every metric is 1 when the answer says "no information available" or "not
mentioned", else 0. Exact match is LoCoMo's: the same set of normalised tokens. BLEU-1 is the one the published
systems report (mem0's evaluation, after A-Mem: NLTK's sentence BLEU with weights (1, 0, 0, 0)): the clipped unigram
precision of the lower-cased tokens times the brevity penalty, 0 when no token matches; tokens are words and
punctuation marks (a regular expression in place of NLTK's tokenizer, which needs a download).
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from dataclasses import dataclass

import Stemmer

MULTI_HOP, OPEN_DOMAIN, ADVERSARIAL = 1, 3, 5
"""LoCoMo's category codes that its evaluation scores apart."""
REFUSALS = ("no information available", "not mentioned")
"""What an answer to an adversarial question must say (LoCoMo's evaluation)."""
_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)
_TOKEN = re.compile(r"\w+|[^\w\s]")
_STEMMER = Stemmer.Stemmer("porter")


@dataclass(frozen=True)
class AnswerScores:
    f1: float
    bleu1: float
    exact: float


def normalise(text: str) -> str:
    """LoCoMo's normalisation of an answer."""
    text = text.replace(",", "").lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def token_f1(answer: str, gold: str) -> float:
    """F1 of the Porter stems of the normalised tokens (LoCoMo's `f1_score`)."""
    found = Counter(_STEMMER.stemWords(normalise(answer).split()))
    wanted = Counter(_STEMMER.stemWords(normalise(gold).split()))
    same = sum((found & wanted).values())
    if same == 0:
        return 0.0
    precision, recall = same / sum(found.values()), same / sum(wanted.values())
    return 2 * precision * recall / (precision + recall)


def multi_f1(answer: str, gold: str) -> float:
    """LoCoMo's multi-answer F1: each comma-separated gold part scored by its best answer part, then averaged."""
    parts = [p.strip() for p in answer.split(",")]
    golds = [g.strip() for g in gold.split(",")]
    return sum(max(token_f1(p, g) for p in parts) for g in golds) / len(golds)


def exact_match(answer: str, gold: str) -> float:
    """1 when the normalised answer and gold hold the same set of tokens (LoCoMo's `exact_match_score`)."""
    return float(set(normalise(answer).split()) == set(normalise(gold).split()))


def bleu1(answer: str, gold: str) -> float:
    """Sentence BLEU-1 with one reference: clipped unigram precision × brevity penalty."""
    found, wanted = _TOKEN.findall(answer.lower()), _TOKEN.findall(gold.lower())
    clipped = sum((Counter(found) & Counter(wanted)).values())
    if not found or clipped == 0:
        return 0.0
    brevity = 1.0 if len(found) > len(wanted) else math.exp(1 - len(wanted) / len(found))
    return brevity * clipped / len(found)


def score(answer: str, gold: str, category: int) -> AnswerScores:
    """An answer's scores against its gold answer, as LoCoMo scores its category."""
    if category == ADVERSARIAL:
        refused = float(any(phrase in answer.lower() for phrase in REFUSALS))
        return AnswerScores(refused, refused, refused)
    if category == OPEN_DOMAIN:
        gold = gold.split(";")[0].strip()
    f1 = multi_f1(answer, gold) if category == MULTI_HOP else token_f1(answer, gold)
    return AnswerScores(f1, bleu1(answer, gold), exact_match(answer, gold))
