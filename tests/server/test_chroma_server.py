"""The engine against a real Chroma server: persistence, conformance, recall, and an outage."""

from __future__ import annotations

import json

import pytest

from harness.data.generated import vectors_evalset
from harness.measure.server_processes import ChromaServer
from harness.measure.timing import measure
from reference import BackendUnavailableError, CellularMemory, MemoryConfig
from reference.common.chroma import http_client
from reference.encoders import MockEncoder
from reference.store.collection import ChromaCells
from reference.store.protocol import StoreIdentity

pytest_plugins = ["pytester"]


def server_memory(server: ChromaServer, namespace: str, lease: float = MemoryConfig().lease_seconds) -> CellularMemory:
    host, port = server.address.split(":")
    config = MemoryConfig(namespace=namespace, lease_seconds=lease)
    return CellularMemory(encoder=MockEncoder(), client=http_client(host, int(port)), config=config)


def test_memory_in_a_server_survives_reopen(chroma_server):
    with server_memory(chroma_server, "reopen") as memory:
        ids = memory.add(["Maria Lopez lives in Lisbon.", "The build broke on Friday.", "Tea is brewed at 80 °C."])
        before = [(h.id, round(h.score, 6)) for h in memory.search("Who lives in Lisbon?", k=3)]
        memory.search("Lisbon", k=1)
        accessed = memory.get(ids[0]).access_count
    with server_memory(chroma_server, "reopen") as memory:
        assert sorted(memory.ids()) == sorted(ids)
        assert memory.get(ids[0]).access_count == accessed
        assert [(h.id, round(h.score, 6)) for h in memory.search("Who lives in Lisbon?", k=3)] == before


BEYOND_ONE_READ = 33_000
"""Records with metadata beyond what one read of Chroma's server returns (SQLite's variables per statement)."""


def test_a_collection_beyond_one_chroma_read_is_read_whole(chroma_server):
    host, port = chroma_server.address.split(":")
    cells = ChromaCells(http_client(host, int(port)), "large", StoreIdentity(dim=2, encoder="mock"))
    ids = [f"c{i}" for i in range(BEYOND_ONE_READ)]
    for start in range(0, len(ids), cells.batch):
        chunk = ids[start : start + cells.batch]
        scopes = [f"s{i % 2}" for i in range(start, start + len(chunk))]
        cells._collection.add(ids=chunk, embeddings=[[1.0, 0.0]] * len(chunk), metadatas=[{"scope": s} for s in scopes])
    found = cells.read(["metadatas"])
    assert found["ids"] == ids and len(found["metadatas"]) == len(ids)
    assert len(cells.read([], where={"scope": "s1"})["ids"]) == len(ids) // 2


def test_conformance_suite_against_the_server_backed_engine(pytester, chroma_server):
    report = pytester.path / "report"
    pytester.runpytest_inprocess(
        "--pyargs",
        "harness.conformance",
        "--memory-system=reference",
        f"--memory-system-option=server={chroma_server.address}",
        f"--conformance-report={report}",
        "-p",
        "no:cacheprovider",
    )
    table = json.loads((report / "conformance.json").read_text())["requirements"]
    not_passed = {rid: e["outcome"] for rid, e in table.items() if e["outcome"] != "passed"}
    assert not_passed == {"MB-ID-1": "skipped"}  # for systems that make their own ids; the engine takes the caller's
    assert table["MB-PERSIST-1"]["outcome"] == "passed"


def test_recall_suite_against_the_server_backed_engine(chroma_server):
    evalset = vectors_evalset(5_000, queries=100, seed=9)
    [server_backed] = measure("reference", evalset, encoder="vectors", options={"server": chroma_server.address})
    [in_memory] = measure("reference", evalset, encoder="vectors")
    assert server_backed.recall_at_10 == pytest.approx(in_memory.recall_at_10) and server_backed.recall_at_10 >= 0.95


def test_an_outage_gives_a_clear_error_and_no_acknowledged_write_is_lost(tmp_path):
    with ChromaServer(tmp_path / "data") as server:
        memory = server_memory(server, "outage", lease=600)  # the outage stays within its lease
        acknowledged = memory.add([f"before the outage {i}" for i in range(20)])
        server.stop()
        with pytest.raises(BackendUnavailableError, match="Chroma"):
            memory.add(["written while the server is down"])
        assert len(memory) == 20  # the failed batch is not half-added in memory
        assert memory.search("before the outage", k=3)  # reads are served from memory meanwhile
        server.start()  # the same folder and port
        acknowledged += memory.add([f"after the outage {i}" for i in range(20)])  # the same client recovers
        memory.close()
        with server_memory(server, "outage") as reopened:
            assert sorted(reopened.ids()) == sorted(acknowledged)
            assert not any("server is down" in reopened.get(i).text for i in reopened.ids())


def test_the_cli_keeps_memories_in_a_chroma_server(chroma_server, dead_port):
    from tests.integration.test_chat_cli import chat

    host = f"http://127.0.0.1:{dead_port}"
    first = chat(
        ["/remember --fact The office wifi is called Falcon-5G"],
        "--chroma-server",
        chroma_server.address,
        env_host=host,
    )
    assert f"Chroma server {chroma_server.address}" in first
    again = chat(["/search office wifi"], "--chroma-server", chroma_server.address, env_host=host)
    assert "The office wifi is called Falcon-5G" in again
    wrong = chat(["/status"], "--chroma-server", "nonsense", env_host=host, expect_failure=True)
    assert "HOST:PORT" in wrong
