"""Encode an evaluation set once per encoder, cached on disk under `datasets/cache/`.

The cache key is a hash of every document and query text plus the encoder's name, so a changed
dataset or encoder never reuses stale vectors. Every system that takes vectors gets these same ones.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from harness.data.corpus import Corpus
from harness.data.evalset import EvalSet
from harness.output.progress import Progress, silent
from reference.encoders import Encoder

CACHE = Path("datasets") / "cache"
"""Encoded vectors are cached under the working directory, never inside the installed package."""


def fingerprint(evalset: EvalSet, encoder_name: str) -> str:
    digest = hashlib.sha256(encoder_name.encode())
    for text in [d.text for d in evalset.docs] + [q.text for q in evalset.queries]:
        digest.update(b"\x00" + text.encode("utf-8"))
    return digest.hexdigest()[:20]


def encode_evalset(evalset: EvalSet, encoder: Encoder, *, cache: Path | None = CACHE) -> EvalSet:
    """The set with unit vectors attached to every document and query."""
    path = None if cache is None else cache / f"{evalset.name}-{encoder.name}-{fingerprint(evalset, encoder.name)}.npz"
    if path is not None and path.is_file():
        stored = np.load(path)
        return evalset.with_vectors(stored["docs"], stored["queries"])
    docs = encoder.encode([d.text for d in evalset.docs])
    queries = encoder.encode([q.text for q in evalset.queries])
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npz")  # parallel workers never share it
        np.savez(partial, docs=docs, queries=queries)
        partial.replace(path)
    return evalset.with_vectors(docs, queries)


def corpus_cache(corpus: Corpus, encoder: Encoder, cache: Path | None = CACHE) -> Path | None:
    """Where the corpus's vectors are cached (None: not cached)."""
    return None if cache is None else cache / f"corpus-{corpus.name}-{encoder.name}-{corpus.fingerprint}.npy"


def encode_corpus(
    corpus: Corpus,
    encoder: Encoder,
    *,
    cache: Path | None = CACHE,
    chunk: int = 2048,
    progress: Progress = silent,
) -> np.ndarray:
    """Unit vectors of every passage, encoded once per (corpus, encoder) and cached; progress per chunk."""
    path = corpus_cache(corpus, encoder, cache)
    if path is not None and path.is_file():
        cached: np.ndarray = np.load(path)
        return cached
    parts = []
    chunks = range(0, len(corpus.passages), chunk)
    for start in progress(chunks, f"encoding {corpus.name} ({encoder.name}, {chunk} passages per step)"):
        parts.append(encoder.encode(corpus.passages[start : start + chunk]))
    vectors = np.concatenate(parts).astype(np.float32)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npy")
        np.save(partial, vectors)
        partial.replace(path)
    return vectors
