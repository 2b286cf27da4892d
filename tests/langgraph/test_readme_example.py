"""The README's LangGraph example as written, in a compiled graph: the environment of the README's install line has
LangGraph (its `langgraph` extra), as this one (`tox -e langchain`) does."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, TypedDict

import pytest

pytest.importorskip("langgraph", reason="the LangGraph integration needs the extra 'langgraph'")

from langchain_core.embeddings import DeterministicFakeEmbedding
from langgraph.graph import START, StateGraph
from langgraph.store.base import BaseStore

README = Path(__file__).resolve().parents[2] / "README.md"


class State(TypedDict):
    note: str
    recalled: list[str]


def remember(state: State, *, store: BaseStore) -> dict[str, Any]:
    store.put(("notes",), "latest", {"text": state["note"]})
    return {"recalled": [item.value["text"] for item in store.search(("notes",), query=state["note"], limit=1)]}


def test_the_readme_langgraph_example_runs_in_a_graph(tmp_path, monkeypatch):
    [example] = [b for b in re.findall(r"```python\n(.*?)```", README.read_text(), re.S) if "builder.compile" in b]
    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_edge(START, "remember")
    monkeypatch.chdir(tmp_path)  # the example's `path="memory"` is made here
    names: dict[str, Any] = {"builder": builder, "embeddings": DeterministicFakeEmbedding(size=384)}
    exec(compile(example, "README's LangGraph example", "exec"), names)
    try:
        out = names["graph"].invoke({"note": "The build broke on Friday", "recalled": []})
        assert out["recalled"] == ["The build broke on Friday"]
        assert (tmp_path / "memory").is_dir()  # persisted where the example says
    finally:
        names["store"].close()
