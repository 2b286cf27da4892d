"""The harness checks every answer instead of trusting it (ann-benchmarks' lesson)."""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np

from harness.protocol import Document, SearchHit


class ContractViolation(AssertionError):
    """A system broke the adapter contract; the message says how."""


def check_documents(docs: Sequence[Document]) -> None:
    """Documents the harness hands out have unique ids (duplicates are the harness's bug)."""
    ids = [d.id for d in docs]
    if len(set(ids)) != len(ids):
        raise ContractViolation("duplicate document ids in the input")


def check_hits(system: str, hits: Sequence[SearchHit], *, k: int, known_ids: Collection[str]) -> list[SearchHit]:
    """At most k hits, ids unique and known, scores finite and non-increasing."""
    hits = list(hits)
    problems = []
    if len(hits) > k:
        problems.append(f"returned {len(hits)} hits for k={k}")
    ids = [h.doc_id for h in hits]
    if len(set(ids)) != len(ids):
        problems.append("returned a document twice")
    unknown = [i for i in ids if i not in known_ids]
    if unknown:
        problems.append(f"returned unknown ids {unknown[:3]}")
    scores = np.asarray([h.score for h in hits], dtype=np.float64)
    if not np.isfinite(scores).all():
        problems.append("returned a NaN or infinite score")
    elif (np.diff(scores) > 1e-9).any():
        problems.append("returned scores that are not sorted best first")
    if problems:
        raise ContractViolation(f"{system}: " + "; ".join(problems))
    return hits
