"""Generated evaluation sets: needles, topic haystacks, clustered vectors with exact ground truth."""

from __future__ import annotations

from datetime import UTC

import numpy as np

from harness.data.corpus import Corpus
from harness.data.dialogue import SPEAKER_CAPTIONS, TurnFormat, turn_metadata
from harness.data.evalset import Conversation, EvalSet
from harness.data.generators.needles import needle_set
from harness.data.generators.topics import topic_haystack
from harness.data.generators.updates import UpdateDialogue, fact_streams, update_dialogues
from harness.data.generators.vectors import clustered_unit_vectors, exact_top_k
from harness.protocol import Document, Query


def needles_evalset(haystack: int = 200, needles: int = 5, *, seed: int = 0) -> EvalSet:
    """One query per needle; the needle is its only relevant document."""
    data = needle_set(haystack, needles, seed=seed)
    docs = [Document(f"d{i}", text) for i, text in enumerate(data.texts)]
    queries = [Query(f"q{j}", n.question) for j, n in enumerate(data.needles)]
    qrels = {f"q{j}": {f"d{n.position}": 1.0} for j, n in enumerate(data.needles)}
    return EvalSet(f"needles-{haystack}x{needles}-s{seed}", docs, queries, qrels)


def topics_evalset(size: int, *, seed: int = 0) -> EvalSet:
    """A topic haystack with true labels (no queries: it measures grouping, not retrieval)."""
    data = topic_haystack(size, seed=seed)
    docs = [Document(f"d{i}", text) for i, text in enumerate(data.texts)]
    return EvalSet(f"topics-{size}-s{seed}", docs, [], {}, labels=data.labels, topics=tuple(data.topics))


def vectors_evalset(
    n: int,
    *,
    queries: int = 200,
    dim: int = 384,
    clusters: int = 100,
    spread: float = 0.8,
    seed: int = 0,
    k: int = 10,
) -> EvalSet:
    """Clustered unit vectors (synthetic); each query's exact top-k is its relevant set (recall vs exact)."""
    data = clustered_unit_vectors(n, dim, clusters, spread=spread, queries=queries, seed=seed)
    truth = exact_top_k(data.vectors, data.queries, k)
    docs = [Document(f"v{i}", f"vector {i}", vector) for i, vector in enumerate(data.vectors)]
    query_list = [Query(f"q{j}", "", vector) for j, vector in enumerate(data.queries)]  # no words to match
    qrels = {f"q{j}": {f"v{i}": 1.0 for i in row} for j, row in enumerate(truth.tolist())}
    return EvalSet(
        f"vectors-{n}-c{clusters}-sp{spread:g}-s{seed}",
        docs,
        query_list,
        qrels,
        labels=np.asarray(data.labels),
    )


def corpus_evalset(
    corpus: Corpus, vectors: np.ndarray, size: int, *, queries: int = 300, seed: int = 0, k: int = 10
) -> EvalSet:
    """`size` passages of a real-text corpus as documents and `queries` other passages as held-out
    vector queries (a seeded draw); each query's exact top-k is its relevant set (recall vs exact)."""
    if size + queries > len(corpus.passages):
        raise ValueError(
            f"{corpus.name} has {len(corpus.passages):,} passages: too few for {size:,} + {queries} queries"
        )
    order = np.random.default_rng(seed).permutation(len(corpus.passages))
    held_out, kept = order[:queries], np.sort(order[queries : queries + size])
    truth = exact_top_k(vectors[kept], vectors[held_out], k)
    docs = [Document(f"p{i}", corpus.passages[i], vectors[i]) for i in kept.tolist()]
    query_list = [Query(f"q{i}", corpus.passages[i], vectors[i]) for i in held_out.tolist()]
    qrels = {q.id: {docs[r].id: 1.0 for r in row} for q, row in zip(query_list, truth.tolist())}
    return EvalSet(f"{corpus.name}-{size}-s{seed}", docs, query_list, qrels)


def stream_evalset(corpus: Corpus, vectors: np.ndarray, cells: int, *, queries: int, seed: int = 0) -> EvalSet:
    """The first `cells` + `queries` passages of a corpus: `queries` of them drawn at random (seeded) as
    held-out text and vector queries, the other `cells` as the stream, in the corpus's written order."""
    if cells + queries > len(corpus.passages):
        raise ValueError(f"{corpus.name} has {len(corpus.passages):,} passages: too few for {cells:,} + {queries}")
    held_out = np.sort(np.random.default_rng(seed).choice(cells + queries, size=queries, replace=False))
    stream = np.setdiff1d(np.arange(cells + queries), held_out)
    docs = [Document(f"p{i}", corpus.passages[i], vectors[i]) for i in stream.tolist()]
    query_list = [Query(f"q{i}", corpus.passages[i], vectors[i]) for i in held_out.tolist()]
    return EvalSet(f"{corpus.name}-stream-{cells}-s{seed}", docs, query_list, {})


def notes_evalset(cells: int, *, queries: int, seed: int = 5) -> EvalSet:
    """Topic sentences made unique by a number, as an agent's notes (synthetic: faker), and held-out
    sentences of another haystack as queries; no vectors yet."""
    sentences = topic_haystack(2_000, seed=seed).texts
    docs = [Document(f"n{i}", f"{sentences[i % len(sentences)]} (note {i})") for i in range(cells)]
    asked = topic_haystack(queries, seed=seed + 1).texts
    return EvalSet(f"notes-{cells}-s{seed}", docs, [Query(f"q{j}", text) for j, text in enumerate(asked)], {})


def updates_evalsets(
    conversations: int = 4, *, seed: int = 0, turn_format: TurnFormat = SPEAKER_CAPTIONS
) -> dict[str, list[EvalSet]]:
    """Generated memories whose facts change (`generators.updates`), one set per conversation or stream:
    `dialogues` (LongMemEval-style sessions of two friends) and `facts` (MemoryAgentBench-style streams of
    one-sentence facts). Each turn or fact is a document with its session, date, speaker and time; each
    changed fact a question whose relevant document is its current version, every version in
    `conversation.versions`."""
    return {
        "dialogues": [_updates_evalset(d, turn_format) for d in update_dialogues(conversations, seed=seed)],
        "facts": [_updates_evalset(d, turn_format) for d in fact_streams(conversations, seed=seed)],
    }


def _updates_evalset(dialogue: UpdateDialogue, turn_format: TurnFormat) -> EvalSet:
    docs = [
        Document(
            turn.id,
            turn_format.render(turn.text, speaker=turn.speaker, date=f"{turn.time:%d %B %Y}"),
            metadata=turn_metadata(
                f"S{turn.session}", f"{turn.time:%d %B %Y}", turn.speaker, turn.time.replace(tzinfo=UTC).timestamp()
            ),
        )
        for turn in dialogue.turns
    ]
    queries = [Query(f"{dialogue.name}/q{i}", update.question) for i, update in enumerate(dialogue.updates)]
    conversation = Conversation(
        {turn.id: f"S{turn.session}" for turn in dialogue.turns},
        {q.id: update.kind for q, update in zip(queries, dialogue.updates)},
        {q.id: update.versions for q, update in zip(queries, dialogue.updates)},
        dialogue.asked_at.replace(tzinfo=UTC).timestamp(),
    )
    qrels = {q.id: dict.fromkeys(update.versions[-1], 1.0) for q, update in zip(queries, dialogue.updates)}
    return EvalSet(dialogue.name, docs, queries, qrels, conversation=conversation)
