"""An embedded store is held by one process at a time, and what a crash leaves opens whole: a damaged vector
segment is rebuilt, a write in flight is undone or finished, and a store whose holder died between writes
opens as it is."""

import fcntl
import json
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from reference import BackendUnavailableError, CellularMemory, StoreDamagedError
from reference.common.chroma import persistent_client
from reference.encoders import MockEncoder
from reference.store.collection import ChromaCells
from reference.store.embedded import in_wal_mode, set_aside_vector_segment
from reference.store.sidecar import Sidecar
from tests.integration.test_persistence import TEXTS, answers

ROOT = Path(__file__).resolve().parents[2]
REOPEN = textwrap.dedent(
    """
    import json, logging, sys
    sys.path.insert(0, sys.argv[2])
    logging.basicConfig(level=logging.WARNING)
    from reference import CellularMemory
    from reference.encoders import MockEncoder
    from tests.integration.test_persistence import answers
    with CellularMemory(path=sys.argv[1], encoder=MockEncoder()) as mem:
        print(json.dumps({"ids": mem.ids(), "answers": answers(mem)}))
"""
)
HOLD = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, sys.argv[2])
    from reference import CellularMemory
    from reference.encoders import MockEncoder
    memory = CellularMemory(path=sys.argv[1], encoder=MockEncoder())
    memory.add(["written by the holder"], ids=["held"])
    print("HOLDING", flush=True)
    time.sleep(600)
"""
)


def write_memory(path: Path) -> dict:
    with CellularMemory(path=str(path), encoder=MockEncoder()) as mem:
        mem.add(TEXTS)
        return {"ids": mem.ids(), "answers": json.loads(json.dumps(answers(mem)))}


def reopen_in_new_process(path: Path) -> tuple[dict, str]:
    opened = subprocess.run(
        [sys.executable, "-c", REOPEN, str(path), str(ROOT)], capture_output=True, text=True, timeout=120
    )
    assert opened.returncode == 0, opened.stderr[-3000:]
    return json.loads(opened.stdout), opened.stderr


def stored_vectors(path: Path) -> dict[str, np.ndarray]:
    """What Chroma's own vector segment holds for the cells collection (read by Chroma, not the engine)."""
    client = persistent_client(str(path))
    try:
        got = client.get_collection("mem_cells").get(include=["embeddings"])
        return dict(zip(got["ids"], got["embeddings"], strict=True))
    finally:
        client.close()


def assert_whole(path: Path, before: dict) -> None:
    """The memory reads back as before, and Chroma's own vector segment holds every cell's vector."""
    vectors = stored_vectors(path)
    with CellularMemory(path=str(path), encoder=MockEncoder()) as mem:
        assert mem.ids() == before["ids"] and json.loads(json.dumps(answers(mem))) == before["answers"]
        assert sorted(vectors) == sorted(before["ids"])
        for cell in before["ids"]:
            np.testing.assert_allclose(vectors[cell], mem.get(cell).vector, atol=1e-6)
    sidecar = Sidecar(path)
    try:
        assert sidecar.in_flight() == []
    finally:
        sidecar.close()


def test_a_truncated_vector_segment_is_set_aside_and_rebuilt_on_open(tmp_path):
    before = write_memory(tmp_path)
    segment = next(p for p in tmp_path.iterdir() if p.is_dir())
    (segment / "index_metadata.pickle").write_bytes(b"\x80\x04")  # what SIGKILL mid-persist leaves

    after, log = reopen_in_new_process(tmp_path)

    assert after == before
    assert "Chroma cannot read the vector segment" in log and f"from {len(TEXTS)} cells" in log
    assert [p.name for p in (tmp_path / "set-aside").iterdir()] == [segment.name]  # kept, not deleted
    assert_whole(tmp_path, before)


def hold_in_another_process(path: Path) -> subprocess.Popen:
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(path), str(ROOT)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "HOLDING"
    return holder


def test_a_store_held_by_a_live_process_is_refused_and_opens_at_once_when_it_is_killed(tmp_path):
    before = write_memory(tmp_path)
    holder = hold_in_another_process(tmp_path)
    try:
        with pytest.raises(BackendUnavailableError, match="open in another process"):
            CellularMemory(path=str(tmp_path), encoder=MockEncoder())
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    after, log = reopen_in_new_process(tmp_path)  # the OS released the lock; nothing was in flight
    assert "rebuilt" not in log and "repairing" not in log
    assert after["ids"] == [*before["ids"], "held"]


def test_a_second_open_in_the_same_process_is_refused_and_leaves_the_first_working(tmp_path):
    with CellularMemory(path=str(tmp_path), encoder=MockEncoder()) as first:
        first.add(TEXTS[:3])
        with pytest.raises(BackendUnavailableError, match="already open in this one"):
            CellularMemory(path=str(tmp_path), encoder=MockEncoder())
        first.add(TEXTS[3:5])
        assert len(first.search(TEXTS[4], k=1)) == 1
    with CellularMemory(path=str(tmp_path), encoder=MockEncoder()) as again:
        assert len(again) == 5


def test_opens_at_the_same_instant_let_exactly_one_through(tmp_path):
    opener = textwrap.dedent(
        """
        import sys, time
        sys.path.insert(0, sys.argv[2])
        from reference import BackendUnavailableError, CellularMemory
        from reference.encoders import MockEncoder
        while time.time() < float(sys.argv[3]):
            pass
        try:
            memory = CellularMemory(path=sys.argv[1], encoder=MockEncoder())
        except BackendUnavailableError:
            print("REFUSED", flush=True)
        else:
            print("OPENED", flush=True)
            time.sleep(1.0)
            memory.close()
        """
    )
    write_memory(tmp_path)

    def race(trial: int) -> list[str]:
        start = f"{time.time() + 1.5:.3f}"
        runs = [
            subprocess.Popen([sys.executable, "-c", opener, str(tmp_path), str(ROOT), start], stdout=subprocess.PIPE)
            for _ in range(2)
        ]
        return sorted(run.communicate(timeout=120)[0].decode().strip() for run in runs)

    with ThreadPoolExecutor(1) as pool:
        outcomes = list(pool.map(race, range(5)))
    assert outcomes == [["OPENED", "REFUSED"]] * 5


def test_a_write_in_flight_when_the_process_died_is_undone_and_the_segment_rebuilt(tmp_path):
    before = write_memory(tmp_path)
    sidecar = Sidecar(tmp_path)
    sidecar.begin("add", ["never-written"])  # as a process killed inside Chroma's add leaves it
    sidecar.close()

    after, log = reopen_in_new_process(tmp_path)

    assert after == before and "repairing" in log and f"from {len(TEXTS)} cells" in log
    assert_whole(tmp_path, before)
    assert "rebuilt" not in reopen_in_new_process(tmp_path)[1]  # a clean close needs no rebuild


def test_an_interrupted_repair_starts_over(tmp_path, caplog):
    before = write_memory(tmp_path)
    sidecar = Sidecar(tmp_path)
    sidecar.begin_repair([])  # the repair was killed after moving the segment aside
    sidecar.close()
    set_aside_vector_segment(tmp_path, "mem_cells")

    with caplog.at_level(logging.WARNING), CellularMemory(path=str(tmp_path), encoder=MockEncoder()) as mem:
        assert mem.ids() == before["ids"]
    assert f"from {len(TEXTS)} cells" in caplog.text
    assert_whole(tmp_path, before)


KILLED_DURING_UPDATE = textwrap.dedent(
    """
    import os, sys
    sys.path.insert(0, sys.argv[2])
    from reference import CellularMemory
    from reference.encoders import MockEncoder
    from reference.store.collection import ChromaCells
    memory = CellularMemory(path=sys.argv[1], encoder=MockEncoder())
    ChromaCells.upsert = lambda *args, **kwargs: os._exit(9)  # killed inside Chroma's write
    memory.update(memory.ids()[0], text="an updated text about a walrus")
"""
)


def test_an_update_in_flight_when_the_process_died_is_finished_on_open(tmp_path):
    before = write_memory(tmp_path)
    killed = subprocess.run([sys.executable, "-c", KILLED_DURING_UPDATE, str(tmp_path), str(ROOT)], timeout=120)
    assert killed.returncode == 9

    with CellularMemory(path=str(tmp_path), encoder=MockEncoder()) as mem:
        updated = mem.get(before["ids"][0])
        assert updated.text == "an updated text about a walrus" and updated.history[0]["text"] == TEXTS[0]
        assert mem.search("walrus", k=1)[0].id == updated.id
        assert all(h.text != TEXTS[0] for h in mem.search(TEXTS[0], k=len(TEXTS)))
        assert sorted(mem.ids()) == sorted(before["ids"])
        mem.check_invariants()
    client = persistent_client(str(tmp_path))
    try:
        stored = client.get_collection("mem_cells").get(ids=[updated.id], include=["documents", "embeddings"])
        assert stored["documents"] == [None]  # Chroma holds the new vector; the text lives in the sidecar
        np.testing.assert_allclose(stored["embeddings"][0], updated.vector, atol=1e-6)
    finally:
        client.close()


def test_a_failed_update_changes_nothing(tmp_path, monkeypatch):
    before = write_memory(tmp_path)
    first_upsert = ChromaCells.upsert
    calls = []

    def fails_once(self, *args, **kwargs):
        calls.append(args)
        if len(calls) == 1:
            raise BackendUnavailableError("Chroma went away")
        return first_upsert(self, *args, **kwargs)

    monkeypatch.setattr(ChromaCells, "upsert", fails_once)
    with CellularMemory(path=str(tmp_path), encoder=MockEncoder()) as mem:
        with pytest.raises(BackendUnavailableError, match="went away"):
            mem.update(before["ids"][0], text="an updated text")
        assert mem.get(before["ids"][0]).text == TEXTS[0] and mem.get(before["ids"][0]).history == []
        assert json.loads(json.dumps(answers(mem))) == before["answers"]
    assert len(calls) == 2  # the failed write, then the previous cells put back
    assert_whole(tmp_path, before)


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("vector", b"\x00\x01"),
        ("meta", "{not json"),
        ("conflicts", '[{"with": 3}]'),
        ("meta", "[1, 2]"),
        ("text", None),
    ],
)
def test_a_damaged_stored_cell_is_named_and_nothing_opens_half(tmp_path, column, value):
    write_memory(tmp_path)
    victim = "damaged-cell"
    with CellularMemory(path=str(tmp_path), encoder=MockEncoder()) as mem:
        mem.add(["a cell to damage"], ids=[victim])
    database = sqlite3.connect(tmp_path / "magbench.sqlite3")
    with database:
        database.execute(f"UPDATE cells SET {column} = ? WHERE id = ?", (value, victim))
    database.close()
    with pytest.raises(StoreDamagedError, match=victim):
        CellularMemory(path=str(tmp_path), encoder=MockEncoder())
    with pytest.raises(StoreDamagedError, match=victim):  # the failed open released the store
        CellularMemory(path=str(tmp_path), encoder=MockEncoder())


def test_a_store_written_before_the_sidecar_moves_its_fields_over(tmp_path, caplog):
    """Stores of earlier versions kept the engine's fields in Chroma's metadata (the server layout)."""
    client = persistent_client(str(tmp_path))
    with CellularMemory(client=client, encoder=MockEncoder()) as mem:
        mem.add(TEXTS, metadata=[{"i": i} for i in range(len(TEXTS))])
        before = {"ids": mem.ids(), "answers": json.loads(json.dumps(answers(mem)))}
    client.close()
    with caplog.at_level(logging.WARNING), CellularMemory(path=str(tmp_path), encoder=MockEncoder()) as mem:
        assert mem.ids() == before["ids"] and mem.get(before["ids"][4]).metadata == {"i": 4}
    assert f"moved the fields of {len(TEXTS)} cells" in caplog.text
    assert_whole(tmp_path, before)


def test_each_text_is_written_once_in_the_sidecar_not_as_a_chroma_document(tmp_path):
    before = write_memory(tmp_path)
    client = persistent_client(str(tmp_path))
    try:
        stored = client.get_collection("mem_cells").get(include=["documents"])
        assert sorted(stored["ids"]) == sorted(before["ids"]) and set(stored["documents"]) == {None}
    finally:
        client.close()
    assert reopen_in_new_process(tmp_path)[0] == before


def test_a_store_that_kept_its_texts_in_chroma_documents_moves_them_over(tmp_path, caplog):
    """Earlier versions wrote each text as a Chroma document (an update in flight: the new texts in its mark)."""
    before = write_memory(tmp_path)
    updated = before["ids"][3]
    client = persistent_client(str(tmp_path))
    try:
        collection = client.get_collection("mem_cells")
        vectors = collection.get(ids=before["ids"], include=["embeddings"])["embeddings"]
        collection.update(ids=before["ids"], embeddings=vectors, documents=TEXTS)
    finally:
        client.close()
    database = sqlite3.connect(tmp_path / "magbench.sqlite3")
    with database:
        database.execute("UPDATE cells SET text = NULL")
        database.execute(
            "INSERT INTO in_flight (write, ids, texts) VALUES ('update', ?, ?)",
            (json.dumps([updated]), json.dumps(["the update a killed process left in flight"])),
        )
    database.close()

    with caplog.at_level(logging.WARNING), CellularMemory(path=str(tmp_path), encoder=MockEncoder()) as mem:
        assert mem.ids() == before["ids"]
        assert mem.get(updated).text == "the update a killed process left in flight"
        assert [mem.get(cell).text for cell in before["ids"] if cell != updated] == TEXTS[:3] + TEXTS[4:]
    assert f"moved the texts of {len(TEXTS)} cells" in caplog.text
    with CellularMemory(path=str(tmp_path), encoder=MockEncoder()) as mem:  # moved once, kept
        assert mem.get(before["ids"][0]).text == TEXTS[0]


def test_the_lock_is_an_os_lock_not_a_marker(tmp_path):
    with CellularMemory(path=str(tmp_path), encoder=MockEncoder()):
        lock = tmp_path / "magbench.lock"
        assert lock.exists()
        probe = os.open(lock, os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(probe)


def test_the_cells_collection_builds_a_cheap_graph_and_one_made_with_the_default_still_serves(tmp_path):
    """The engine never searches Chroma's graph, so its collection asks for a cheap one; a store whose
    collection Chroma made with its default graph opens, reads and writes as before."""
    fresh, old = tmp_path / "fresh", tmp_path / "old"
    write_memory(fresh)
    client = persistent_client(str(old))
    try:
        client.create_collection("mem_cells", embedding_function=None, configuration={"hnsw": {"space": "cosine"}})
    finally:
        client.close()
    write_memory(old)
    with CellularMemory(path=str(old), encoder=MockEncoder()) as mem:
        mem.add(["written to the default graph"], ids=["later"])
        written = {"ids": mem.ids(), "answers": json.loads(json.dumps(answers(mem)))}
    assert_whole(old, written)
    for path, graph in ((fresh, (16, 16)), (old, (100, 16))):
        client = persistent_client(str(path))
        try:
            made = client.get_collection("mem_cells").configuration_json["hnsw"]
            assert (made["ef_construction"], made["max_neighbors"]) == graph
        finally:
            client.close()


def journal_mode(path: Path) -> str:
    return "wal" if in_wal_mode(path / "chroma.sqlite3") else "delete"


def test_chromas_database_is_put_in_wal_mode_but_never_under_a_client_that_has_it_open(tmp_path):
    """A new store and one Chroma made with its rollback journal both open in WAL mode (one sync per Chroma commit
    instead of four) and read back whole; a store a Chroma client of this process holds open keeps its mode."""
    fresh, old, held = tmp_path / "fresh", tmp_path / "old", tmp_path / "held"
    write_memory(fresh)
    assert journal_mode(fresh) == "wal"
    for path in (old, held):
        client = persistent_client(str(path))
        client.create_collection("mem_cells", embedding_function=None, configuration={"hnsw": {"space": "cosine"}})
        assert journal_mode(path) == "delete"
        if path == old:
            client.close()
    written = write_memory(old)
    assert journal_mode(old) == "wal"
    assert_whole(old, written)
    try:
        with CellularMemory(path=str(held), encoder=MockEncoder()) as mem:
            mem.add(["written beside an open Chroma client"], ids=["beside"])
            assert mem.ids() == ["beside"]
        assert journal_mode(held) == "delete"
    finally:
        client.close()
