"""Searches of a server's clients answered together (`reference/integrations/coalescing.py`): each caller gets its
own query's hits from its own scope, callers queued behind a running batch share the next one, and one caller's
bad query is that caller's error alone. Real threads; a gate inside the first batch holds it until the others have
queued, so the test does not depend on timing."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from reference import CellularMemory
from reference.encoders import MockEncoder
from reference.errors import InvalidInputError
from reference.integrations.coalescing import SearchCoalescer

SCOPES = ("user:ann", "user:bob", "user:cy")
WORDS = "harbor lantern orchard meadow copper violin glacier saffron tundra falcon".split()


@pytest.fixture
def memory() -> Iterator[CellularMemory]:
    with CellularMemory(encoder=MockEncoder(32)) as mem:
        for s, scope in enumerate(SCOPES):
            texts = [f"{scope} note {WORDS[i % 10]} {WORDS[(i * 3 + s) % 10]} {i}" for i in range(60)]
            mem.add(texts, scope=scope)
        yield mem


class Gated:
    """A memory whose first `search_batch` waits until the test opens the gate; records each batch's size."""

    def __init__(self, memory: CellularMemory) -> None:
        self.memory, self.gate, self.sizes = memory, threading.Event(), []
        self._first = True

    def search(self, *args: Any, **kwargs: Any) -> Any:
        return self.memory.search(*args, **kwargs)

    def search_batch(self, queries: list[str], *args: Any, **kwargs: Any) -> Any:
        self.sizes.append(len(queries))
        if self._first:
            self._first = False
            assert self.gate.wait(30)
        return self.memory.search_batch(queries, *args, **kwargs)


def queued(coalescer: SearchCoalescer, callers: int) -> None:
    deadline = time.monotonic() + 30
    while coalescer.waiting() < callers:
        assert time.monotonic() < deadline, "the callers never queued"
        time.sleep(0.001)


def test_callers_that_arrive_while_a_batch_runs_share_the_next_one(memory):
    gated = Gated(memory)
    coalescer = SearchCoalescer(gated)  # type: ignore[arg-type]
    queries = [f"{WORDS[i]} {WORDS[(i + 4) % 10]}" for i in range(9)]
    with ThreadPoolExecutor(len(queries)) as pool:
        first = pool.submit(coalescer.search, queries[0], 5, scope="user:ann")
        while not gated.sizes:
            time.sleep(0.001)
        rest = [pool.submit(coalescer.search, q, 5, scope="user:ann") for q in queries[1:]]
        queued(coalescer, len(rest))
        gated.gate.set()
        answers = [first.result(30)] + [f.result(30) for f in rest]
    assert gated.sizes == [1, len(rest)]
    for query, hits in zip(queries, answers, strict=True):
        assert [h.id for h in hits] == [h.id for h in memory.search(query, 5, scope="user:ann")]


def test_a_batch_holds_one_restriction_so_no_caller_reads_another_scope(memory):
    coalescer = SearchCoalescer(memory, max_batch=4)
    calls = [(SCOPES[i % 3], f"{WORDS[i % 10]} {WORDS[(i * 7) % 10]}", 3 + i % 2) for i in range(600)]

    def one(call: tuple[str, str, int]) -> tuple[list[str], list[str]]:
        scope, query, k = call
        hits = coalescer.search(query, k, scope=scope)
        return [h.id for h in hits], [h.text.split(" ")[0] for h in hits]

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(one, calls))
    for (scope, query, k), (ids, scopes) in zip(calls, answers, strict=True):
        assert set(scopes) == {scope}
        assert ids == [h.id for h in memory.search(query, k, scope=scope)]
    assert coalescer.waiting() == 0


def test_one_callers_bad_query_is_its_error_alone(memory):
    gated = Gated(memory)
    coalescer = SearchCoalescer(gated)  # type: ignore[arg-type]
    with ThreadPoolExecutor(4) as pool:
        first = pool.submit(coalescer.search, "harbor", 5, scope="user:bob")
        while not gated.sizes:
            time.sleep(0.001)
        good = [pool.submit(coalescer.search, q, 5, scope="user:bob") for q in ("violin", "falcon")]
        bad = pool.submit(coalescer.search, "", 5, scope="user:bob")
        queued(coalescer, 3)
        gated.gate.set()
        assert [h.id for h in first.result(30)] == [h.id for h in memory.search("harbor", 5, scope="user:bob")]
        assert all(len(f.result(30)) == 5 for f in good)
        with pytest.raises(InvalidInputError):
            bad.result(30)
    assert coalescer.waiting() == 0
