"""An embedded store left damaged or unclosed by a crash opens whole, and its Chroma collection is whole again."""

import json
import logging
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from reference import BackendUnavailableError, CellularMemory
from reference.chroma import persistent_client
from reference.embedded import OPEN_MARKER, REPAIR_PENDING, set_aside_vector_segment
from reference.encoders import MockEncoder
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
    assert not (path / OPEN_MARKER).exists() and not (path / REPAIR_PENDING).exists()


def test_a_truncated_vector_segment_is_set_aside_and_rebuilt_on_open(tmp_path):
    before = write_memory(tmp_path)
    segment = next(p for p in tmp_path.iterdir() if p.is_dir())
    (segment / "index_metadata.pickle").write_bytes(b"\x80\x04")  # what SIGKILL mid-persist leaves

    after, log = reopen_in_new_process(tmp_path)

    assert after == before
    assert "Chroma cannot read the vector segment" in log and f"from {len(TEXTS)} cells" in log
    assert [p.name for p in (tmp_path / "set-aside").iterdir()] == [segment.name]  # kept, not deleted
    assert_whole(tmp_path, before)


@pytest.mark.parametrize("marker", ["dead-pid", "empty"])
def test_a_store_left_open_by_a_dead_process_is_rebuilt(tmp_path, marker):
    before = write_memory(tmp_path)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    # as a SIGKILLed writer leaves it, or one killed while writing the marker itself
    (tmp_path / OPEN_MARKER).write_text(dead.stdout.strip() if marker == "dead-pid" else "")

    after, log = reopen_in_new_process(tmp_path)

    assert after == before
    assert "was not closed" in log and f"from {len(TEXTS)} cells" in log
    assert_whole(tmp_path, before)
    assert "rebuilt" not in reopen_in_new_process(tmp_path)[1]  # a clean close needs no rebuild


def test_an_interrupted_rebuild_starts_over(tmp_path, caplog):
    before = write_memory(tmp_path)
    (tmp_path / REPAIR_PENDING).touch()  # the rebuild was killed after moving the segment aside
    set_aside_vector_segment(tmp_path, "mem_cells")

    with caplog.at_level(logging.WARNING), CellularMemory(path=str(tmp_path), encoder=MockEncoder()) as mem:
        assert mem.ids() == before["ids"]
    assert f"from {len(TEXTS)} cells" in caplog.text
    assert_whole(tmp_path, before)


def test_a_store_open_in_another_live_process_is_refused_untouched(tmp_path):
    before = write_memory(tmp_path)
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) as holder:
        try:
            (tmp_path / OPEN_MARKER).write_text(str(holder.pid))
            with pytest.raises(BackendUnavailableError, match=f"open in process {holder.pid}"):
                CellularMemory(path=str(tmp_path), encoder=MockEncoder())
            assert (tmp_path / OPEN_MARKER).read_text() == str(holder.pid)
        finally:
            holder.kill()
    (tmp_path / OPEN_MARKER).unlink()
    assert_whole(tmp_path, before)
