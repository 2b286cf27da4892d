"""The LangChain integration against `langchain-tests`' standard vector-store suite, sync and async, in memory
and on an embedded store; then what the standard suite does not cover: scopes and filters through keyword
arguments, a store reopened from its path, and a retriever."""

from __future__ import annotations

import pytest

pytest.importorskip("langchain_tests", reason="the LangChain suite runs in its own environment: tox -e langchain")

from langchain_core.documents import Document
from langchain_tests.integration_tests import VectorStoreIntegrationTests

from reference import InvalidInputError
from reference.integrations.langchain import CellularVectorStore


class TestInMemory(VectorStoreIntegrationTests):
    @pytest.fixture
    def vectorstore(self):
        store = CellularVectorStore(embedding=self.get_embeddings())
        yield store
        store.close()


class TestEmbedded(VectorStoreIntegrationTests):
    @pytest.fixture
    def vectorstore(self, tmp_path):
        store = CellularVectorStore(embedding=self.get_embeddings(), path=str(tmp_path / "memory"))
        yield store
        store.close()


@pytest.fixture
def store():
    store = CellularVectorStore(embedding=VectorStoreIntegrationTests.get_embeddings())
    yield store
    store.close()


def test_scopes_and_filters_reach_the_engine(store):
    store.add_texts(
        ["Alice lives in Paris", "Alice likes tea"], [{"source": "chat"}, {"source": "mail"}], scope="user:alice"
    )
    store.add_texts(["Bob lives in Paris"], scope="user:bob")
    assert [d.page_content for d in store.similarity_search("lives in Paris", k=5, scope="user:bob")] == [
        "Bob lives in Paris"
    ]
    found = store.similarity_search("Alice", k=5, scope="user:alice", filter={"source": "mail"})
    assert [d.page_content for d in found] == ["Alice likes tea"]
    store.delete(scope="user:alice")
    assert [d.page_content for d in store.similarity_search("Paris", k=5)] == ["Bob lives in Paris"]


def test_a_store_reopened_from_its_path_holds_what_was_added(tmp_path):
    embeddings = VectorStoreIntegrationTests.get_embeddings()
    first = CellularVectorStore(embedding=embeddings, path=str(tmp_path / "memory"))
    ids = first.add_texts(["a note to keep"], [{"n": 1}])
    first.close()
    again = CellularVectorStore(embedding=embeddings, path=str(tmp_path / "memory"))
    try:
        assert again.get_by_ids(ids) == [Document(page_content="a note to keep", metadata={"n": 1}, id=ids[0])]
    finally:
        again.close()


def test_a_retriever_with_a_score_threshold(store):
    store.add_texts(["the launch is on Friday", "lunch is at noon"])
    retriever = store.as_retriever(
        search_type="similarity_score_threshold", search_kwargs={"score_threshold": 0.0, "k": 1}
    )
    assert [d.page_content for d in retriever.invoke("launch Friday")] == ["the launch is on Friday"]


def test_unknown_arguments_and_bad_input_are_typed_errors(store):
    with pytest.raises(InvalidInputError, match="unknown arguments"):
        store.similarity_search("x", k=1, colour="red")
    with pytest.raises(InvalidInputError):
        store.add_texts(["a", "b"], ids=["only one"])
    with pytest.raises(InvalidInputError):
        store.add_texts([""])


@pytest.mark.parametrize("metadatas", [[None], ["abc"], [5], [{"n": 10**400}], [{"n": float("nan")}], "abc"])
def test_metadatas_a_store_cannot_hold_are_typed_errors_that_add_nothing(store, metadatas):
    store.add_texts(["a note already there"], ids=["kept"])
    with pytest.raises(InvalidInputError):
        store.add_texts(["a new note"], metadatas=metadatas)
    assert [d.id for d in store.similarity_search("note", k=5)] == ["kept"]


def test_an_id_held_by_another_scope_is_refused_not_replaced(store):
    store.add_texts(["bank pin is 4321"], ids=["note-1"], scope="user:alice")
    with pytest.raises(InvalidInputError, match="outside its scope"):
        store.add_texts(["my own note"], ids=["note-1"], scope="user:bob")
    [kept] = store.get_by_ids(["note-1"])
    assert kept.page_content == "bank pin is 4321"
    assert [d.id for d in store.similarity_search("bank pin", k=2, scope="user:alice")] == ["note-1"]
    assert store.similarity_search("my own note", k=2, scope="user:bob") == []


def test_a_string_where_a_list_of_ids_belongs_is_refused(store):
    store.add_texts(["first", "second", "third"], ids=["a", "b", "ab"])
    for call in (lambda: store.delete("ab"), lambda: store.get_by_ids("ab"), lambda: store.add_texts(["x"], ids="a")):
        with pytest.raises(InvalidInputError, match="list"):
            call()
    assert {d.id for d in store.get_by_ids(["a", "b", "ab"])} == {"a", "b", "ab"}
    store.delete(["ab"])
    assert [d.id for d in store.get_by_ids(["a", "b", "ab"])] == ["a", "b"]
