"""A store whose vector segment a crash left unreadable opens whole, and the collection is whole again."""

import json
import logging
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

from reference import CellularMemory
from reference.chroma import persistent_client
from reference.encoders import MockEncoder
from reference.recovery import REWRITE_PENDING, set_aside_vector_segment
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
        return {"ids": mem.ids(), "answers": json.loads(json.dumps(answers(mem))), "id": mem._store.collection_id}


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


def test_a_truncated_vector_segment_is_set_aside_and_rebuilt_on_open(tmp_path):
    before = write_memory(tmp_path)
    segment = next(p for p in tmp_path.iterdir() if p.is_dir())
    (segment / "index_metadata.pickle").write_bytes(b"\x80\x04")  # what SIGKILL mid-persist leaves

    after, log = reopen_in_new_process(tmp_path)

    assert after == {"ids": before["ids"], "answers": before["answers"]}
    assert "moving its vector segment aside" in log and f"rewrote the vectors of {len(TEXTS)} cells" in log
    assert [p.name.rsplit("-", 1)[0] for p in (tmp_path / "set-aside").iterdir()] == [segment.name]  # kept
    assert not (tmp_path / REWRITE_PENDING).exists()
    vectors = stored_vectors(tmp_path)
    with CellularMemory(path=str(tmp_path), encoder=MockEncoder()) as mem:
        assert len(vectors) == len(TEXTS)
        for cell in before["ids"]:
            np.testing.assert_allclose(vectors[cell], mem.get(cell).vector, atol=1e-6)
    assert reopen_in_new_process(tmp_path)[0]["ids"] == before["ids"]


def test_an_interrupted_repair_resumes_its_rewrite(tmp_path, caplog):
    before = write_memory(tmp_path)
    (tmp_path / REWRITE_PENDING).touch()  # the repair was killed after moving the segment aside
    set_aside_vector_segment(str(tmp_path), before["id"])

    with caplog.at_level(logging.WARNING), CellularMemory(path=str(tmp_path), encoder=MockEncoder()) as mem:
        assert mem.ids() == before["ids"]
    assert f"rewrote the vectors of {len(TEXTS)} cells" in caplog.text
    assert not (tmp_path / REWRITE_PENDING).exists()
    assert sorted(stored_vectors(tmp_path)) == sorted(before["ids"])
