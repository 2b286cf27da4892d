"""What `langchain-tests`' suite does not reach and needs no suite: a delete across scopes answered as an unknown
id is, and maximal marginal relevance against LangChain's own `InMemoryVectorStore` (sync, async, by vector)."""

from __future__ import annotations

import asyncio
import hashlib
import re

import pytest

pytest.importorskip("langchain_core", reason="the LangChain integration needs the extra 'langchain'")

from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore

from reference import InvalidInputError
from reference.integrations.langchain import CellularVectorStore


class BagOfWords(Embeddings):
    """Each word hashed to one of 256 buckets and counted: texts sharing words are near."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        vector = [0.0] * 256
        for word in re.findall(r"[a-z]+", text.lower()):
            vector[hashlib.blake2b(word.encode(), digest_size=2).digest()[0]] += 1.0
        return vector


@pytest.fixture
def store():
    store = CellularVectorStore(embedding=BagOfWords())
    yield store
    store.close()


def test_a_delete_answers_another_scopes_id_as_it_answers_an_unknown_one(store):
    store.add_texts(["Bob's bank pin is 4321"], ids=["bob-1"], scope="user:bob")
    store.add_texts(["Alice's note"], ids=["alice-1"], scope="user:alice")
    assert store.delete(["nope"], scope="user:alice") is True
    assert store.delete(["bob-1"], scope="user:alice") is True
    assert store.delete(["bob-1", "nope"], scope="user:alice") is True
    [bobs] = store.get_by_ids(["bob-1"])
    assert bobs.page_content == "Bob's bank pin is 4321"  # it stays
    assert store.delete(["bob-1", "alice-1"], scope="user:alice") is True  # only her own goes
    assert [d.id for d in store.get_by_ids(["bob-1", "alice-1"])] == ["bob-1"]
    assert store.delete(["bob-1"], scope="user:bob") is True
    assert store.get_by_ids(["bob-1"]) == []


TEXTS = {
    "snake-1": "python snake bites hard",
    "snake-2": "python snake bites very hard",
    "snake-3": "python snake bites very hard today",
    "code": "python code runs fast",
    "guitar": "python band guitar solo tonight",
    "tea": "green tea in the morning",
}


def both_stores() -> tuple[CellularVectorStore, InMemoryVectorStore]:
    ours, theirs = CellularVectorStore(embedding=BagOfWords()), InMemoryVectorStore(embedding=BagOfWords())
    for store in (ours, theirs):
        store.add_texts(list(TEXTS.values()), ids=list(TEXTS))
    return ours, theirs


@pytest.mark.parametrize("lambda_mult", [0.0, 0.3, 0.5, 1.0])
def test_mmr_by_vector_chooses_what_langchains_in_memory_store_chooses(lambda_mult):
    ours, theirs = both_stores()
    try:
        query = BagOfWords().embed_query("python snake bites")
        chosen = [d.id for d in ours.max_marginal_relevance_search_by_vector(query, k=3, lambda_mult=lambda_mult)]
        expected = theirs.max_marginal_relevance_search_by_vector(query, k=3, lambda_mult=lambda_mult)
        assert chosen == [d.id for d in expected]
        if lambda_mult < 1:
            assert len({i for i in chosen if i.startswith("snake")}) < 3  # diverse: not three near-copies
    finally:
        ours.close()


def test_mmr_of_a_text_sync_and_async_diversifies_and_keeps_to_its_scope_and_filter():
    ours, _ = both_stores()
    try:
        ours.add_texts(["python snake bites hard"], ids=["other-scope"], scope="user:bob")
        plain = [d.id for d in ours.similarity_search("python snake bites", k=3)]
        assert plain == ["snake-1", "snake-2", "snake-3"]
        diverse = [d.id for d in ours.max_marginal_relevance_search("python snake bites", k=3, fetch_k=6)]
        assert diverse[0] == "snake-1" and len({i for i in diverse if i.startswith("snake")}) < 3
        assert "other-scope" not in diverse and len(set(diverse)) == 3
        assert [d.id for d in ours.max_marginal_relevance_search("python snake bites", k=3, fetch_k=6)] == diverse
        found = asyncio.run(ours.amax_marginal_relevance_search("python snake bites", k=3, fetch_k=6))
        assert [d.id for d in found] == diverse
        vector = BagOfWords().embed_query("python snake bites")
        by_vector = asyncio.run(ours.amax_marginal_relevance_search_by_vector(vector, k=3, fetch_k=6))
        assert [d.id for d in by_vector] == [d.id for d in ours.max_marginal_relevance_search_by_vector(vector, k=3)]
        retriever = ours.as_retriever(search_type="mmr", search_kwargs={"k": 3, "fetch_k": 6})
        assert [d.id for d in retriever.invoke("python snake bites")] == diverse
        assert [d.id for d in asyncio.run(retriever.ainvoke("python snake bites"))] == diverse
        only_bob = ours.max_marginal_relevance_search("python snake", k=3, scope="user:bob")
        assert [d.id for d in only_bob] == ["other-scope"]
    finally:
        ours.close()


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({"fetch_k": 0}, "fetch_k must be a positive integer"),
        ({"fetch_k": 2.5}, "fetch_k must be a positive integer"),
        ({"lambda_mult": 1.5}, r"lambda_mult must be a number in \[0, 1\]"),
        ({"lambda_mult": "0.5"}, r"lambda_mult must be a number in \[0, 1\]"),
        ({"k": 0}, "k must be a positive integer"),
        ({"scope": "user:bob", "colour": "red"}, "unknown arguments"),
    ],
)
def test_bad_mmr_arguments_are_typed_errors(store, arguments, says):
    store.add_texts(["python snake"], ids=["a"])
    with pytest.raises(InvalidInputError, match=says):
        store.max_marginal_relevance_search("python", **arguments)
