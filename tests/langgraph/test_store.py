"""`CellularStore` against LangGraph's own `InMemoryStore` (random sequences of operations, many seeds), semantic
search with a bag-of-words embedding, a compiled graph whose nodes use the injected store, persistence, async
calls, concurrency and bad input."""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import re
import threading
import time
from typing import Any, TypedDict

import pytest

pytest.importorskip("langgraph", reason="the LangGraph integration needs the extra 'langgraph'")

from langchain_core.embeddings import Embeddings
from langgraph.config import get_store
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from reference import CellularMemory, InvalidInputError
from reference.common.errors import DimensionMismatchError, MagneticError
from reference.common.validation import MAX_DEPTH
from reference.integrations.langgraph import CellularStore

DIMS = 1024


STOPWORDS = frozenset("a an and does for has how in is of the to what where which who with".split())


class BagOfWords(Embeddings):
    """Each word but stopwords hashed to one of `dims` buckets and counted: texts sharing words are near."""

    def __init__(self, dims: int = DIMS) -> None:
        self.dims = dims

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        vector = [0.0] * self.dims
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            if word not in STOPWORDS:
                vector[int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big") % self.dims] += 1
        return vector


def index(fields: list[str] | None = None, dims: int = DIMS) -> dict[str, Any]:
    config: dict[str, Any] = {"dims": dims, "embed": BagOfWords(dims)}
    if fields is not None:
        config["fields"] = fields
    return config


@pytest.fixture
def store():
    store = CellularStore(index=index(["text"]))
    yield store
    store.close()


# ---- 1. differential: the same random operations on CellularStore and InMemoryStore --------------------------

LABELS = ["users", "docs", "alice", "bob", "prefs", "v1"]
WORDS = ["python", "pasta", "lisbon", "guitar", "river", "tea", "code", "snake", "band", "water"]
COLORS = ["red", "blue", "green"]
INDEXES: list[list[str] | None] = [None, ["text", "tags[*]"], ["$"]]
"""Per seed: no index, two fields (one a list, a vector per element), the whole value."""
SEEDS = range(100)
STEPS = 100


class Differential:
    """One random sequence: each step a single operation through the store's methods, or a batch of 2–5. Where
    CellularStore differs on purpose, the reference is brought to its rule (`drop_stale_vectors`,
    `drop_empty_namespaces`) or the comparison says so (`check_search`)."""

    def __init__(self, seed: int, path: str | None = None) -> None:
        self.rng = random.Random(seed)
        fields = INDEXES[seed % len(INDEXES)]
        self.indexed, self.path = fields is not None, path
        self.config = index(fields) if fields else None
        self.ours = CellularStore(index=self.config, path=path)
        self.theirs = InMemoryStore(index=index(fields)) if fields else InMemoryStore()
        depths = [self.rng.randint(1, 3) for _ in range(7)]
        self.spaces = sorted({tuple(self.rng.choices(LABELS, k=depth)) for depth in depths})
        self.keys = [f"k{i}" for i in range(5)]
        self.ops = 0

    def run(self, steps: int, *, reopen_every: int = 0) -> None:
        """`reopen_every` steps (with a path), the store is closed and opened again from its directory."""
        for step in range(1, steps + 1):
            if reopen_every and step % reopen_every == 0:
                self.ours.close()
                self.ours = CellularStore(index=self.config, path=self.path)
            single = self.rng.random() > 0.12
            ops = [self.op() for _ in range(1 if single else self.rng.randint(2, 5))]
            self.step(ops, single)
        self.ours.close()

    def step(self, ops: list[Any], single: bool) -> None:
        expected = [self.expected(op) for op in ops]
        before = {(op.namespace, op.key): self.ours.get(op.namespace, op.key) for op in ops if isinstance(op, PutOp)}
        got = [via_api(self.ours, ops[0])] if single else self.ours.batch(ops)
        puts = [op for op in ops if isinstance(op, PutOp)]
        for put in puts:  # one by one: InMemoryStore fails a batch holding one text twice (its embedding count)
            drop_stale_vectors(self.theirs, put)
            self.theirs.batch([put])
        self.ops += len(ops)
        for op, want, result in zip(ops, expected, got):
            check(op, want, result, ranked=self.indexed)
        for op in {(op.namespace, op.key): op for op in puts}.values():
            self.check_put(op, before[(op.namespace, op.key)])

    def expected(self, op: Any) -> Any:
        """What InMemoryStore answers (reads see the store before the batch's writes, as both stores define)."""
        if isinstance(op, GetOp):
            return self.theirs.get(op.namespace, op.key)
        if isinstance(op, SearchOp):
            everything = op._replace(limit=10**6, offset=0)
            return self.theirs.batch([op])[0], self.theirs.batch([everything])[0], self.ours.batch([everything])[0]
        if isinstance(op, ListNamespacesOp):
            drop_empty_namespaces(self.theirs)
            return self.theirs.batch([op])[0]
        return None

    def check_put(self, op: PutOp, before: Item | None) -> None:
        after = self.ours.get(op.namespace, op.key)
        if op.value is None:
            assert after is None
            return
        assert after is not None and after.value == op.value
        if before is None:
            assert after.created_at == after.updated_at
        else:
            assert after.created_at == before.created_at and after.updated_at >= before.updated_at

    # ---- random operations ----

    def op(self) -> Any:
        rng = self.rng
        kinds = ["put"] * 8 + ["delete"] * 2 + ["get"] * 3 + ["search"] * 4 + ["list"] * 2
        kinds += ["query"] * 3 if self.indexed else []
        kind = rng.choice(kinds)
        if kind == "put":
            return PutOp(self.space(), rng.choice(self.keys), self.value(), index=self.put_index())
        if kind == "delete":
            return PutOp(self.space(), rng.choice(self.keys), None)
        if kind == "get":
            return GetOp(self.space(), rng.choice(self.keys))
        if kind == "list":
            return self.listing()
        query = " ".join(rng.choices(WORDS, k=rng.randint(1, 3))) if kind == "query" else None
        filter = self.filter() if rng.random() < 0.6 else None
        return SearchOp(self.prefix(), filter, self.limit(), self.offset(), query)

    def space(self) -> tuple[str, ...]:
        return self.rng.choice(self.spaces) if self.rng.random() < 0.9 else ("nowhere",)

    def prefix(self) -> tuple[str, ...]:
        space = self.rng.choice(self.spaces)
        return space[: self.rng.randint(0, len(space))]

    def value(self) -> dict[str, Any]:
        rng = self.rng
        value: dict[str, Any] = {"n": rng.choice([rng.randint(-3, 9), round(rng.uniform(-3, 9), 2), True, "4", "2.5"])}
        if rng.random() < 0.85:
            value["text"] = " ".join(rng.choices(WORDS, k=rng.randint(2, 4)))  # never one of the tags
        if rng.random() < 0.7:
            value["color"] = rng.choice([*COLORS, None])
        if rng.random() < 0.5:
            value["meta"] = {"color": rng.choice(COLORS), "size": rng.randint(1, 3)}
        if rng.random() < 0.5:
            value["tags"] = rng.sample(WORDS, rng.randint(0, 3))
        if rng.random() < 0.2:
            value["notes"] = [{"at": rng.randint(1, 3), "ok": rng.random() < 0.5}]
        return value

    def put_index(self) -> Any:
        roll = self.rng.random()
        return False if roll < 0.15 else ["tags[*]"] if roll < 0.25 else ["meta.color", "text"] if roll < 0.3 else None

    def filter(self) -> dict[str, Any]:
        rng = self.rng
        bound = rng.randint(-2, 8)
        choices = [
            {"color": rng.choice([*COLORS, None])},
            {"color": {"$ne": rng.choice(COLORS)}},
            {"color": {"$eq": rng.choice(COLORS)}},
            {"n": {rng.choice(["$gt", "$gte", "$lt", "$lte"]): bound}},
            {"n": {"$gt": bound - 3, "$lte": bound + rng.uniform(0, 4)}},
            {"n": rng.choice([1, 4, True, "4", 2.5])},
            {"meta": {"color": rng.choice(COLORS)}},
            {"meta": {"size": {"$gte": rng.randint(1, 3)}}},
            {"tags": rng.sample(WORDS, rng.randint(0, 2))},
            {"notes": [{"at": rng.randint(1, 3), "ok": True}]},
        ]
        merged: dict[str, Any] = {}
        for part in rng.sample(choices, rng.randint(1, 2)):
            merged |= part
        return merged

    def listing(self) -> ListNamespacesOp:
        rng = self.rng
        conditions = []
        if rng.random() < 0.4:
            conditions.append(MatchCondition("prefix", self.pattern()))
        if rng.random() < 0.3:
            conditions.append(MatchCondition("suffix", self.pattern()))
        depth = rng.choice([None, None, 1, 2, 3])
        return ListNamespacesOp(tuple(conditions), depth, self.limit(), self.offset())

    def pattern(self) -> tuple[str, ...]:
        labels = list(self.prefix() or self.rng.choice(self.spaces))
        if labels and self.rng.random() < 0.3:
            labels[self.rng.randrange(len(labels))] = "*"
        return tuple(labels)

    def limit(self) -> int:
        return self.rng.choice([0, 1, 2, 3, 5, 100])

    def offset(self) -> int:
        return self.rng.choice([0, 0, 0, 1, 2, 5])


def via_api(store: BaseStore, op: Any) -> Any:
    """One operation through the store's public methods (which check the namespace first, as a caller meets them)."""
    if isinstance(op, GetOp):
        return store.get(op.namespace, op.key)
    if isinstance(op, PutOp) and op.value is None:
        return store.delete(op.namespace, op.key)
    if isinstance(op, PutOp):
        return store.put(op.namespace, op.key, op.value, index=op.index)
    if isinstance(op, SearchOp):
        return store.search(op.namespace_prefix, query=op.query, filter=op.filter, limit=op.limit, offset=op.offset)
    prefix = next((c.path for c in op.match_conditions if c.match_type == "prefix"), None)
    suffix = next((c.path for c in op.match_conditions if c.match_type == "suffix"), None)
    return store.list_namespaces(prefix=prefix, suffix=suffix, max_depth=op.max_depth, limit=op.limit, offset=op.offset)


def drop_stale_vectors(theirs: InMemoryStore, put: PutOp) -> None:
    """InMemoryStore keeps a key's vectors of paths its new value no longer has (or all of them, put with
    index=False); CellularStore replaces them. The reference is brought to CellularStore's rule by forgetting the
    old vectors of the key put (its `_vectors`, a name its source asks to keep)."""
    theirs._vectors[put.namespace].pop(put.key, None)


def drop_empty_namespaces(theirs: InMemoryStore) -> None:
    """InMemoryStore lists a namespace once anything touched it (a get, a search, the delete of its last item);
    CellularStore lists the namespaces holding items."""
    for namespace in [ns for ns, items in theirs._data.items() if not items]:
        del theirs._data[namespace]


def check(op: Any, want: Any, got: Any, *, ranked: bool) -> None:
    if isinstance(op, GetOp):
        assert identity(got) == identity(want), op
    elif isinstance(op, SearchOp):
        check_search(op, *want, got, ranked=ranked and bool(op.query))
    elif isinstance(op, ListNamespacesOp):
        assert got == want, op
    else:
        assert got is None


def check_search(
    op: SearchOp, page: list[Any], everything: list[Any], ours_everything: list[Any], got: list[Any], *, ranked: bool
) -> None:
    """The same matches; a page is a slice of CellularStore's own order (newest first: InMemoryStore's insertion
    order is not its rule); ranked by a query, the same scores, the items without a score after the scored ones."""
    assert {identity(i) for i in ours_everything} == {identity(i) for i in everything}, op
    assert [identity(i) for i in got] == [identity(i) for i in ours_everything[op.offset : op.offset + op.limit]], op
    unscored = [i.updated_at for i in ours_everything if i.score is None]
    assert unscored == sorted(unscored, reverse=True), "newest first"
    if not ranked:
        assert len(got) == len(page) and all(i.score is None for i in got), op
        return
    scores = {(i.namespace, i.key): i.score for i in everything}
    ours = [i.score for i in got if i.score is not None]
    assert ours == pytest.approx([i.score for i in page if i.score is not None], abs=1e-5), op
    assert all(i.score == pytest.approx(scores[i.namespace, i.key], abs=1e-5) for i in got if i.score is not None)
    assert [i.score is None for i in got] == sorted(i.score is None for i in got), "scored first"
    if op.offset == 0:  # InMemoryStore fills a page with unscored items from the first, whatever its offset
        assert len(got) == len(page), op


def identity(item: Item | None) -> Any:
    return None if item is None else (item.namespace, item.key, json.dumps(item.value, sort_keys=True))


@pytest.mark.parametrize("seed", SEEDS)
def test_same_results_as_langgraphs_in_memory_store(seed):
    run = Differential(seed)
    run.run(STEPS)
    assert run.ops >= STEPS


@pytest.mark.embedded
@pytest.mark.parametrize("seed", range(3))
def test_same_results_on_an_embedded_store_reopened(seed, tmp_path):
    run = Differential(seed, path=str(tmp_path / "store"))
    run.run(STEPS // 2, reopen_every=10)


# ---- 2. semantic search ---------------------------------------------------------------------------------------

DOCS = {
    "python": "Python is a programming language with a large standard library",
    "pasta": "Cook the pasta in salted boiling water for ten minutes",
    "lisbon": "Alice moved to Lisbon and lives near the river",
    "guitar": "Bob plays the electric guitar in a rock band",
}


@pytest.mark.parametrize(
    ("query", "best"),
    [
        ("which programming language has a standard library", "python"),
        ("where does Alice live", "lisbon"),
        ("how long to boil pasta", "pasta"),
        ("who plays guitar", "guitar"),
    ],
)
def test_semantic_search_ranks_the_right_item_first(store, query, best):
    for key, text in DOCS.items():
        store.put(("docs",), key, {"text": text, "length": len(text)})
    found = store.search(("docs",), query=query, limit=4)
    assert found[0].key == best
    assert [i.score for i in found] == sorted((i.score for i in found), reverse=True)


def test_a_needle_among_many_items(store):
    rng = random.Random(7)
    filler = ["weather", "report", "meeting", "notes", "agenda", "budget", "quarter", "summary", "draft", "memo"]
    for i in range(300):
        store.put(("users", f"u{i % 5}"), f"item{i}", {"text": " ".join(rng.choices(filler, k=6))})
    store.put(("users", "u3"), "needle", {"text": "the spare key is under the blue flower pot"})
    assert store.search(("users",), query="where is the spare key", limit=3)[0].key == "needle"
    assert store.search(("users", "u3"), query="blue flower pot", limit=1)[0].key == "needle"
    assert all(i.key != "needle" for i in store.search(("users", "u1"), query="spare key flower pot", limit=5))


def test_every_element_of_a_list_field_is_a_vector():
    with CellularStore(index=index(["title", "tags[*]"])) as store:
        store.put(("docs",), "a", {"title": "quarterly budget", "tags": ["finance", "guitar"]})
        store.put(("docs",), "b", {"title": "rock band rehearsal", "tags": ["music"]})
        found = store.search(("docs",), query="guitar", limit=2)
        assert found[0].key == "a" and found[0].score == pytest.approx(1.0)


def test_index_false_and_index_fields_at_put(store):
    store.put(("docs",), "plain", {"text": "guitar guitar guitar"}, index=False)
    store.put(("docs",), "titled", {"text": "nothing relevant", "title": "guitar lessons"}, index=["title"])
    store.put(("docs",), "text", {"text": "guitar strings"})
    found = store.search(("docs",), query="guitar", limit=10)
    assert {i.key for i in found[:2]} == {"titled", "text"}
    assert found[2].key == "plain" and found[2].score is None


def test_an_overwrite_replaces_the_old_vectors(store):
    store.put(("docs",), "k", {"text": "guitar"})
    store.put(("docs",), "k", {"other": "no text field"})
    [found] = store.search(("docs",), query="guitar")
    assert found.score is None and found.value == {"other": "no text field"}


def test_without_an_index_a_query_still_finds_items():
    with CellularStore() as store:
        store.put(("docs",), "a", {"text": "guitar", "kind": "x"})
        store.put(("docs",), "b", {"text": "pasta", "kind": "y"})
        assert {i.key for i in store.search(("docs",), query="guitar")} == {"a", "b"}
        assert [i.key for i in store.search(("docs",), query="guitar", filter={"kind": "y"})] == ["b"]


def test_a_filtered_semantic_search(store):
    for key, text in DOCS.items():
        store.put(("docs", key[0]), key, {"text": text, "kind": "music" if key == "guitar" else "other"})
    found = store.search(("docs",), query="programming language", filter={"kind": "other"}, limit=10)
    assert found[0].key == "python" and "guitar" not in {i.key for i in found}


def test_function_and_string_embeddings():
    embed = BagOfWords()
    with CellularStore(index={"dims": DIMS, "embed": embed.embed_documents, "fields": ["text"]}) as store:
        store.put(("docs",), "a", {"text": "guitar band"})
        store.put(("docs",), "b", {"text": "pasta water"})
        assert store.search(("docs",), query="band")[0].key == "a"


# ---- 3. a compiled graph --------------------------------------------------------------------------------------


class State(TypedDict):
    user: str
    fact: str
    question: str
    recalled: list[str]


def remember(state: State, *, store: BaseStore) -> dict[str, Any]:
    namespace = ("memories", state["user"])
    store.put(namespace, f"fact-{len(store.search(namespace, limit=100))}", {"text": state["fact"]})
    return {}


def recall(state: State) -> dict[str, Any]:
    found = get_store().search(("memories", state["user"]), query=state["question"], limit=3)
    return {"recalled": [item.value["text"] for item in found]}


def test_a_compiled_graph_writes_and_reads_memory_through_the_store():
    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_node("recall", recall)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", END)
    store = CellularStore(index=index(["text"]))
    graph = builder.compile(store=store)
    graph.invoke({"user": "alice", "fact": "Alice lives in Lisbon", "question": "where", "recalled": []})
    graph.invoke({"user": "bob", "fact": "Bob plays the guitar", "question": "guitar", "recalled": []})
    out = graph.invoke({"user": "alice", "fact": "Alice drinks green tea", "question": "which tea does Alice drink"})
    assert out["recalled"] == ["Alice drinks green tea", "Alice lives in Lisbon"]
    assert store.list_namespaces(prefix=("memories",)) == [("memories", "alice"), ("memories", "bob")]
    assert store.get(("memories", "bob"), "fact-0").value == {"text": "Bob plays the guitar"}
    store.close()


def test_searches_and_listings_never_read_every_cell_id(store, monkeypatch):
    store.put(("users", "alice"), "home", {"text": "Alice lives in Lisbon"})
    store.put(("users", "bob"), "drop", {"text": "gone"})
    store.put(("docs",), "rock", {"text": "guitar band"})
    store.delete(("users", "bob"), "drop")

    def every_id(*args, **kwargs):
        raise AssertionError("CellularStore read every cell id")

    monkeypatch.setattr(CellularMemory, "ids", every_id)
    assert store.list_namespaces() == [("docs",), ("users", "alice")]
    assert [item.key for item in store.search(("users",), query="where does Alice live")] == ["home"]
    assert [item.key for item in store.search(("users",), filter={"text": "Alice lives in Lisbon"})] == ["home"]
    assert [item.key for item in store.search(())] == ["rock", "home"]


# ---- 4. persistence, timestamps, async, concurrency, bad input ------------------------------------------------


@pytest.mark.embedded
def test_a_reopened_store_has_its_items_and_timestamps(tmp_path):
    path = str(tmp_path / "store")
    value = {"text": "Alice lives in Lisbon", "n": 2**62, "x": 0.1, "ok": True, "none": None, "deep": {"l": [1, "é"]}}
    with CellularStore(index=index(["text"]), path=path) as store:
        store.put(("users", "alice"), "home", value)
        store.put(("users", "alice"), "drink", {"text": "green tea"})
        store.put(("users", "bob"), "drop", {"text": "gone"})
        store.delete(("users", "bob"), "drop")
        store.put(("docs",), "rock", {"text": "guitar band"}, index=False)
        kept = [store.get(("users", "alice"), "home"), store.get(("docs",), "rock")]
    with CellularStore(index=index(["text"]), path=path) as store:
        assert [store.get(("users", "alice"), "home"), store.get(("docs",), "rock")] == kept
        assert store.get(("users", "alice"), "home").value == value
        assert store.get(("users", "bob"), "drop") is None
        assert store.list_namespaces() == [("docs",), ("users", "alice")]
        assert store.search(("users",), query="where does Alice live")[0].key == "home"
        store.put(("users", "alice"), "home", {"text": "Alice moved to Porto"})
        moved = store.get(("users", "alice"), "home")
        assert moved.created_at == kept[0].created_at and moved.updated_at > kept[0].updated_at
    with pytest.raises(MagneticError), CellularStore(index=index(["text"], dims=DIMS // 2), path=path):
        pass
    with CellularStore(index=index(["text"]), path=path) as store:
        assert store.get(("users", "alice"), "home").value == {"text": "Alice moved to Porto"}


def test_created_at_is_kept_and_updated_at_moves(store):
    store.put(("a",), "k", {"v": 1})
    first = store.get(("a",), "k")
    assert first.created_at == first.updated_at and first.created_at.tzinfo is not None
    time.sleep(0.002)
    store.put(("a",), "k", {"v": 2})
    second = store.get(("a",), "k")
    assert second.created_at == first.created_at and second.updated_at > first.updated_at
    store.delete(("a",), "k")
    store.put(("a",), "k", {"v": 3})
    assert store.get(("a",), "k").created_at > first.created_at


def test_values_round_trip_exactly(store):
    value = {"i": 1, "f": 1.0, "b": True, "none": None, "big": -(2**63), "s": "ü\n\t\"", "l": [[], {}, [1.5e-300]],
             "nested": {"a": {"b": {"c": [True, 0, 0.0, ""]}}}, "tuple": (1, 2)}  # fmt: skip
    store.put(("a",), "k", value)
    got = store.get(("a",), "k").value
    assert got == {**value, "tuple": [1, 2]} and json.dumps(got) == json.dumps({**value, "tuple": [1, 2]})
    got["nested"]["a"]["b"]["c"].append("changed")
    assert store.get(("a",), "k").value == {**value, "tuple": [1, 2]}


def test_batch_reads_see_the_store_before_its_writes(store):
    store.put(("a",), "k", {"v": 1})
    results = store.batch([PutOp(("a",), "k", {"v": 2}), GetOp(("a",), "k"), PutOp(("a",), "k", {"v": 3})])
    assert results[0] is None and results[1].value == {"v": 1} and results[2] is None
    assert store.get(("a",), "k").value == {"v": 3}


def test_long_namespaces_and_odd_keys(store):
    namespace = tuple(f"label-{i}-" + "x" * 60 for i in range(5))
    for key in ["", " ", "ключ", '"quoted"', "a/b\\c"]:
        store.put(namespace, key, {"text": f"value of {key!r}"})
        assert store.get(namespace, key).value == {"text": f"value of {key!r}"}
    assert store.list_namespaces() == [namespace]
    assert len(store.search(namespace[:2], limit=10)) == 5


def test_async_methods():
    async def embed(texts: list[str]) -> list[list[float]]:
        return BagOfWords().embed_documents(texts)

    async def scenario(store: CellularStore) -> None:
        await store.aput(("docs",), "a", {"text": "guitar band"})
        await store.aput(("docs",), "b", {"text": "pasta water"})
        assert (await store.aget(("docs",), "a")).value == {"text": "guitar band"}
        assert (await store.asearch(("docs",), query="boiling water"))[0].key == "b"
        assert await store.alist_namespaces() == [("docs",)]
        results = await store.abatch([GetOp(("docs",), "a"), PutOp(("docs",), "a", None), SearchOp(("docs",))])
        assert results[0].key == "a" and len(results[2]) == 2
        await store.adelete(("docs",), "b")
        assert await store.asearch(("docs",)) == []

    with CellularStore(index={"dims": DIMS, "embed": embed, "fields": ["text"]}) as store:
        asyncio.run(scenario(store))


def test_concurrent_writers_and_readers(store):
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for i in range(25):
                store.put(("users", f"w{worker}"), f"k{i % 5}", {"text": f"worker {worker} step {i}", "i": i})
                store.put(("shared",), "k", {"text": f"worker {worker}", "i": i})
                store.search(("users",), query="worker step", limit=5)
                store.get(("shared",), "k")
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    for worker in range(4):
        values = [store.get(("users", f"w{worker}"), f"k{i}").value["i"] for i in range(5)]
        assert values == [20, 21, 22, 23, 24]
    assert len(store.search((), limit=100)) == 21
    assert len(store._memory) == 21  # one cell per item of one vector: nothing left behind by the overwrites


def test_range_filters_skip_values_that_are_not_numbers(store):
    store.put(("a",), "number", {"n": 5})
    store.put(("a",), "word", {"n": "five"})
    store.put(("a",), "missing", {"m": 1})
    assert [i.key for i in store.search(("a",), filter={"n": {"$gt": 1}})] == ["number"]
    assert {i.key for i in store.search(("a",), filter={"n": {"$ne": 5}})} == {"word", "missing"}


def nested(levels: int) -> dict[str, Any]:
    """A value of `levels` nested mappings (the value itself the first)."""
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


EDGES = [
    ("a field named with $", {"$weird": "x", "n": 1}, "k", {"filter": {"$weird": "x"}}, 1),
    ("$and names a field too", {"n": 1}, "k", {"filter": {"$and": [{"n": 1}]}}, 0),
    ("an integer past 64 bits", {"n": 2**64, "m": -(10**30)}, "k", {"filter": {"n": 2**64}}, 1),
    ("as deep as values go", nested(MAX_DEPTH), "k", {"filter": {"a": nested(MAX_DEPTH)["a"]}}, 1),
    ("a key longer than a text", {"x": 1}, "k" * 1_100_000, {}, 2),
]


@pytest.mark.parametrize(
    ("value", "key", "search", "expected"), [edge[1:] for edge in EDGES], ids=[edge[0] for edge in EDGES]
)
@pytest.mark.parametrize("persisted", [False, True])
def test_the_edges_of_values_keys_and_filters_as_in_memory_store(value, key, search, expected, persisted, tmp_path):
    ours = CellularStore(index=index(["text"]), path=str(tmp_path / "store") if persisted else None)
    try:
        for store in (theirs := InMemoryStore(), ours):
            store.put(("docs", "alice"), key, value)
            store.put(("docs", "bob"), "other", {"n": 2, "text": "another item"})
        if persisted:
            ours.close()
            ours = CellularStore(index=index(["text"]), path=str(tmp_path / "store"))
        assert ours.get(("docs", "alice"), key).value == theirs.get(("docs", "alice"), key).value == value
        found = sorted((i.namespace, i.key, json.dumps(i.value)) for i in ours.search(("docs",), **search))
        assert found == sorted((i.namespace, i.key, json.dumps(i.value)) for i in theirs.search(("docs",), **search))
        assert len(found) == expected
    finally:
        ours.close()


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (nested(MAX_DEPTH + 1), rf"value(\['a'\]){{{MAX_DEPTH}}} nests deeper than {MAX_DEPTH} levels$"),
        ({"x": {"y": float("nan")}}, r"value\['x'\]\['y'\] is nan; JSON numbers are finite$"),
        ({"x": [{1: 2}]}, r"value\['x'\]\[0\] has the key 1; JSON keys are strings$"),
    ],
)
def test_a_refused_value_is_named_by_its_key_and_namespace_never_by_internals(store, value, says):
    with pytest.raises(InvalidInputError, match=r"^the value of key 'k' in namespace \('a',\): " + says) as refused:
        store.put(("a",), "k", value)
    assert "metadata" not in str(refused.value) and "texts" not in str(refused.value)
    assert store.get(("a",), "k") is None


def test_a_value_a_store_wrote_as_a_mapping_before_is_still_read(store):
    store.put(("a",), "k", {"text": "new"})
    record = store._memory.get(json.dumps([["a"], "k"]))
    store._memory.update(record.id, metadata={**record.metadata, "value": {"text": "old", "n": 1}})
    assert store.get(("a",), "k").value == {"text": "old", "n": 1}
    assert [item.key for item in store.search(("a",), filter={"n": 1})] == ["k"]


BAD_PUTS = [
    (("a.b",), "k", {"v": 1}, InvalidNamespaceError),
    (("",), "k", {"v": 1}, InvalidNamespaceError),
    ((), "k", {"v": 1}, InvalidNamespaceError),
    ("users", "k", {"v": 1}, InvalidNamespaceError),
    (["users"], "k", {"v": 1}, InvalidNamespaceError),
    (("langgraph",), "k", {"v": 1}, InvalidNamespaceError),
    (("a",), "k", ["not", "a", "mapping"], InvalidInputError),
    (("a",), "k", {"v": {1, 2}}, InvalidInputError),
    (("a",), "k", {"v": float("nan")}, InvalidInputError),
    (("a",), "k", {1: "integer key"}, InvalidInputError),
    (("a",), "k", nested(MAX_DEPTH + 1), InvalidInputError),
    (("a",), "k", {"v": object()}, InvalidInputError),
]


@pytest.mark.parametrize(("namespace", "key", "value", "error"), BAD_PUTS)
def test_a_bad_put_raises_and_loses_nothing(store, namespace, key, value, error):
    store.put(("a",), "k", {"text": "kept"})
    with pytest.raises(error):
        store.put(namespace, key, value)
    with pytest.raises(error):
        store.batch([PutOp(("a",), "k", {"text": "overwritten"}), PutOp(namespace, key, value)])
    assert store.get(("a",), "k").value == {"text": "kept"}
    assert store.list_namespaces() == [("a",)]


def nested_list(levels: int) -> Any:
    """A filter condition of lists `levels` deep: deeper than a value may be, and than the stack's depth."""
    condition: Any = 1
    for _ in range(levels):
        condition = [condition]
    return condition


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda s: s.batch([PutOp(("a",), 1, {"v": 1})]), InvalidInputError),
        (lambda s: s.batch([GetOp(("a",), None)]), InvalidInputError),
        (lambda s: s.batch(["not an op"]), InvalidInputError),
        (lambda s: s.batch(PutOp(("a",), "k", {"v": 1})), InvalidInputError),
        (lambda s: s.put(("a",), "k", {"v": 1}, index="text"), InvalidInputError),
        (lambda s: s.put(("a",), "k", {"v": 1}, ttl=5), NotImplementedError),
        (lambda s: s.batch([PutOp(("a",), "k", {"v": 1}, ttl=5.0)]), NotImplementedError),
        (lambda s: s.search(("a",), filter={"n": {"$regex": "x"}}), InvalidInputError),
        (lambda s: s.search(("a",), filter={"n": {"$gt": "3"}}), InvalidInputError),
        (lambda s: s.search(("a",), filter=[("n", 1)]), InvalidInputError),
        (lambda s: s.search(("a",), filter={"n": {"$lt": 10**400}}), InvalidInputError),
        (lambda s: s.search(("a",), filter={"n": {"$gte": float("nan")}}), InvalidInputError),
        (lambda s: s.search(("a",), filter={"n": nested_list(5000)}), InvalidInputError),
        (lambda s: s.search(("a",), limit=-1), InvalidInputError),
        (lambda s: s.search(("a",), offset="1"), InvalidInputError),
        (lambda s: s.search(("a",), query=3), InvalidInputError),
        (lambda s: s.search(("a.b",)), InvalidNamespaceError),
        (lambda s: s.get(("a", ""), "k"), InvalidNamespaceError),
        (lambda s: s.list_namespaces(max_depth=-1), InvalidInputError),
        (lambda s: s.list_namespaces(prefix=("a.b",)), InvalidNamespaceError),
        (lambda s: s.batch([ListNamespacesOp((MatchCondition("middle", ("a",)),))]), InvalidInputError),
    ],
)
def test_bad_calls_raise_clear_errors(store, call, error):
    store.put(("a",), "k", {"text": "kept"})
    with pytest.raises(error):
        call(store)
    assert store.get(("a",), "k").value == {"text": "kept"}


@pytest.mark.parametrize(
    "config", [{"embed": BagOfWords()}, {"dims": 0, "embed": BagOfWords()}, {"dims": DIMS}, "openai", {"dims": 8}]
)
def test_a_bad_index_configuration_is_refused(config):
    with pytest.raises(InvalidInputError):
        CellularStore(index=config)


def test_an_embedding_of_the_wrong_dimension_writes_nothing():
    with CellularStore(index={"dims": DIMS + 1, "embed": BagOfWords(), "fields": ["text"]}) as store:
        store.put(("a",), "unindexed", {"text": "kept"}, index=False)
        with pytest.raises(DimensionMismatchError):
            store.put(("a",), "k", {"text": "guitar"})
        with pytest.raises(DimensionMismatchError):
            store.search(("a",), query="guitar")
        assert [i.key for i in store.search(("a",))] == ["unindexed"]


def test_a_closed_store_refuses_calls():
    store = CellularStore()
    store.put(("a",), "k", {"v": 1})
    store.close()
    store.close()
    with pytest.raises(InvalidInputError, match="closed"):
        store.get(("a",), "k")
