"""`magbench demo`: ingest a generated topic haystack with needles, search it, print what happened."""

from __future__ import annotations

import time

from tabulate import tabulate

from harness.data.generators.needles import needle_set
from reference import CellularMemory
from reference.encoders import make_encoder
from reference.store import server_client


def run_demo(*, encoder_name: str, size: int, path: str | None, server: str | None, seed: int) -> int:
    encoder = make_encoder(encoder_name)
    data = needle_set(size, 5, seed=seed)
    print(f"encoder: {encoder.name} ({encoder.dim}-d); haystack: {size} documents with 5 needles")
    with CellularMemory(path=path, encoder=encoder, client=server_client(server) if server else None) as memory:
        ids = [f"demo-s{seed}-{i}" for i in range(len(data.texts))]  # a rerun on a stored haystack adds nothing
        missing = [i for i, cell in enumerate(ids) if cell not in memory]
        started = time.perf_counter()
        if missing:
            memory.add([data.texts[i] for i in missing], ids=[ids[i] for i in missing])
        print(
            f"ingested {len(missing)} cells in {time.perf_counter() - started:.2f} s"
            + (f"; {len(ids) - len(missing)} were already stored" if len(missing) < len(ids) else "")
            + f"; the memory holds {len(memory)} cells"
        )
        rows = []
        for needle in data.needles:
            started = time.perf_counter()
            hits = memory.search(needle.question, k=3)
            elapsed = (time.perf_counter() - started) * 1000
            rank = next((i + 1 for i, h in enumerate(hits) if h.id == ids[needle.position]), None)
            cosine = float(encoder.encode([needle.question])[0] @ memory.get(hits[0].id).vector)
            row = [needle.question, hits[0].text[:60], f"{hits[0].score:.3f}", f"{cosine:.3f}", rank or "miss"]
            rows.append([*row, f"{elapsed:.2f}"])
        headers = ["question", "best hit", "score", "cosine", "needle rank", "ms"]
        print(tabulate(rows, headers=headers, disable_numparse=True))
        print(
            "(score: how the engine ranks a text query's hits: half the cosine, plus a boost for the query's entities "
            "it names, and half its BM25 score against the query's best, then shares of the scores of the cells "
            "written with it, so it may pass 1; cosine: the query's vector against the hit's)"
        )
        found = sum(isinstance(row[4], int) for row in rows)
        print(f"\nneedles in the top 3: {found}/5")
        print(tabulate(memory.stats().as_dict().items(), headers=["stat", "value"]))
        print(
            "(group_capacity: the size past which a write splits a group; the k-means steps that then settle the "
            "write's groups move cells to their nearest centroid and may leave one above it, until the scope's next "
            "write splits it)"
        )
    return 0
