"""The PostgreSQL store (`reference/store/postgres.py`) against a real server started by the test: what is written
is what a reopened memory loads, scope by scope through its index, and the ledger of scopes stays exact."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

pytest.importorskip("psycopg", reason="the PostgreSQL store needs psycopg 3: pip install -e '.[postgres]'")

import psycopg

from harness.measure.tenants import run_tenants, tenant_data, tenant_runbook
from harness.systems.engine import ReferenceSystem
from reference import BackendUnavailableError, CellularMemory, EncoderMismatchError, InvalidInputError, MemoryConfig
from reference.encoders import MockEncoder

pytestmark = pytest.mark.usefixtures("postgres_server")
pytest_plugins = ["pytester"]


def open_memory(dsn: str, namespace: str, **config: object) -> CellularMemory:
    return CellularMemory(dsn=dsn, encoder=MockEncoder(64), config=MemoryConfig(namespace=namespace, **config))


def test_what_is_written_is_what_a_reopened_memory_loads(postgres_server):
    dsn = postgres_server.dsn
    with open_memory(dsn, "round") as memory:
        first, second, third = memory.add(
            ["Maria lives in Lisbon.", "Bob drinks tea.", "Ana plays chess."],
            scope=["user:maria", "user:bob", "user:ana"],
            metadata=[{"source": "chat"}, {}, {"tags": ["games"]}],
        )
        memory.update(first, text="Maria lives in Porto.")
        memory.delete(third)
        before = {cell: memory.get(cell) for cell in memory.ids()}
    with open_memory(dsn, "round") as reopened:
        after = {cell: reopened.get(cell) for cell in reopened.ids()}
        assert set(after) == {first, second}
        for cell, record in before.items():
            assert after[cell].text == record.text and after[cell].metadata == record.metadata
            assert after[cell].history == record.history and after[cell].scope == record.scope
            np.testing.assert_array_equal(after[cell].vector, record.vector)
        assert after[first].history[0]["text"] == "Maria lives in Lisbon."
        assert [hit.id for hit in reopened.search("Where does Maria live?", scope="user:maria")] == [first]
        reopened.check_invariants()


def test_the_ledger_lists_exactly_the_scopes_that_hold_cells(postgres_server):
    with open_memory(postgres_server.dsn, "ledger") as memory:
        store = memory._store.store
        memory.add(["one", "two", "three"], scope=["a", "a", "b"])
        assert sorted(store.scopes()) == ["a", "b"]
        memory.delete(scope="b")
        assert store.scopes() == ["a"]
        memory.delete(memory.ids()[:1])
        assert store.scopes() == ["a"]  # one cell of "a" is left
        memory.delete(scope="a")
        assert store.scopes() == []


def test_a_memory_with_resident_cells_loads_only_the_scopes_it_uses(postgres_server):
    dsn = postgres_server.dsn
    with open_memory(dsn, "resident") as memory:
        for user in range(5):
            memory.add([f"user {user} note {n}" for n in range(20)], scope=f"user:{user}")
    with open_memory(dsn, "resident", resident_cells=50) as bounded:
        assert len(bounded._state.table.ids) == 0  # nothing read on open
        hits = bounded.search("note 3", scope="user:2", k=50)
        assert hits and {bounded.get(hit.id).scope for hit in hits} == {"user:2"}
        assert bounded._store.store.count("user:2") == 20 and bounded._store.store.count() == 100


def test_per_scope_reads_go_through_the_scope_index(postgres_server):
    with open_memory(postgres_server.dsn, "indexed") as memory:
        memory.add([f"note {n}" for n in range(200)], scope=[f"s{n % 10}" for n in range(200)])
    with psycopg.connect(postgres_server.dsn, autocommit=True) as connection:
        connection.execute("ANALYZE magbench_cells")
        connection.execute("SET enable_seqscan = off")  # a table this small would be scanned anyway
        plan = connection.execute(
            "EXPLAIN SELECT id FROM magbench_cells WHERE namespace = 'indexed' AND scope = 's3' ORDER BY seq"
        ).fetchall()
    assert "magbench_cells_by_scope" in " ".join(row[0] for row in plan)


def test_a_namespace_made_by_another_encoder_is_refused(postgres_server):
    with open_memory(postgres_server.dsn, "encoded") as memory:
        memory.add(["a note"])
    config = MemoryConfig(namespace="encoded")
    other = MockEncoder(64)
    other.name = "another-encoder"
    with pytest.raises(EncoderMismatchError):
        CellularMemory(dsn=postgres_server.dsn, encoder=other, config=config)
    with CellularMemory(dsn=postgres_server.dsn, encoder=other, config=config, check_encoder=False) as memory:
        assert memory.count() == 1


def test_one_store_at_a_time(postgres_server, tmp_path):
    with pytest.raises(InvalidInputError, match="one of path"):
        CellularMemory(path=str(tmp_path), dsn=postgres_server.dsn, encoder=MockEncoder(64))


def test_a_write_the_database_refuses_part_of_stores_none_of_it(postgres_server):
    with open_memory(postgres_server.dsn, "atomic") as memory:
        with psycopg.connect(postgres_server.dsn, autocommit=True) as connection:  # a row behind the engine's back
            connection.execute(
                "INSERT INTO magbench_cells (namespace, id, scope, text, fields, vector) "
                "VALUES ('atomic', 'taken', 'x', '', '{}', '')"
            )
        with pytest.raises(BackendUnavailableError, match="refused"):
            memory.add(["first", "second", "third"], ids=["first", "taken", "third"], scope="x")
        assert memory.ids() == []
        store = memory._store.store
        assert store.count() == 1 and store.scopes() == [] and store.group_bound() == 0  # the bound as committed


def test_conformance_suite_against_the_postgres_backed_engine(pytester, postgres_server):
    report = pytester.path / "report"
    pytester.runpytest_inprocess(
        "--pyargs",
        "harness.conformance",
        "--memory-system=reference",
        f"--memory-system-option=postgres={postgres_server.dsn}",
        f"--conformance-report={report}",
        "-p",
        "no:cacheprovider",
    )
    table = json.loads((report / "conformance.json").read_text())["requirements"]
    assert {rid: e["outcome"] for rid, e in table.items() if e["outcome"] not in ("passed", "skipped")} == {}
    skipped = {rid: e for rid, e in table.items() if e["outcome"] == "skipped"}
    assert all("does not declare" in str(e) for e in skipped.values()), skipped  # skipped only for a capability
    assert table["MB-PERSIST-1"]["outcome"] == "passed"


def make_postgres_reference(context, **options):
    """The reference adapter on the PostgreSQL store the test started (its DSN in the environment)."""
    return ReferenceSystem(context, name="reference-postgres", postgres=os.environ["MAGBENCH_TEST_POSTGRES"], **options)


def test_the_multi_tenant_runbook_runs_on_the_postgres_store(postgres_server, monkeypatch):
    monkeypatch.setenv("MAGBENCH_TEST_POSTGRES", postgres_server.dsn)
    book = tenant_runbook(6, 20, probed=2, passes=1)
    [row] = run_tenants(book, tenant_data(book), [f"{__name__}:make_postgres_reference"], "vectors")
    assert not row.skipped and row.recall_at_10 == 1.0 and row.write_p50_ms > 0  # and no hit of another scope
    assert row.row()["cells"] == 120
