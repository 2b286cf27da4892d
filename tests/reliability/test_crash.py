"""SIGKILL an ingesting process at random points; every acknowledged batch survives whole, and no
batch is ever partly present.

Each reopen runs in a fresh process, as a restart after a crash does: that is the open that must
cope with what the killed writer left on disk (see `reference.store.embedded`)."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections import Counter

from tests.reliability.counts import record

TRIALS = 20
BATCH = 40
SPLIT_CHUNK = 16
"""Odd trials write each batch in chunks of this many cells (three Chroma writes), even ones in one write."""

INGEST = textwrap.dedent(
    """
    import sys
    from reference import CellularMemory
    from reference.encoders import MockEncoder
    path, trial, BATCH, CHUNK = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    with CellularMemory(path=path, encoder=MockEncoder(64)) as memory:
        if CHUNK:
            memory._state.store.cells.batch = CHUNK  # as if the batch exceeded Chroma's write limit
        print("READY", flush=True)
        for batch in range(10_000):
            tag = f"t{trial}b{batch}"
            memory.add([f"{tag} note {i}" for i in range(BATCH)], ids=[f"{tag}-{i}" for i in range(BATCH)])
            print(f"ACK {tag}", flush=True)
"""
)

COUNT = textwrap.dedent(
    """
    import collections, json, sys
    from reference import CellularMemory
    from reference.encoders import MockEncoder
    with CellularMemory(path=sys.argv[1], encoder=MockEncoder(64)) as memory:
        memory.check_invariants()  # groups and the group, entity and lexical indexes rebuilt from the cells
        if len(memory):
            memory.search("note 3", k=5)  # a text query: dense and lexical sides both answer
        print(json.dumps(collections.Counter(cell.rsplit("-", 1)[0] for cell in memory.ids())))
"""
)


def run_and_kill(path: str, trial: int, rng: random.Random) -> list[str]:
    """Start an ingest, SIGKILL it after a random time, and return the batches it acknowledged."""
    with tempfile.TemporaryFile("w+") as errors:
        process = subprocess.Popen(
            [
                sys.executable,
                "-X",
                "faulthandler",
                "-c",
                INGEST,
                path,
                str(trial),
                str(BATCH),
                str(SPLIT_CHUNK if trial % 2 else 0),
            ],
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        )
        acknowledged: list[str] = []
        ready = threading.Event()

        def read() -> None:
            for line in process.stdout:
                if line.startswith("READY"):
                    ready.set()
                elif line.startswith("ACK ") and line.endswith("\n"):  # a kill can cut the last line short
                    acknowledged.append(line.split()[1])
            ready.set()  # the process ended before it was ready: the returncode check reports why

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        assert ready.wait(120), "the ingesting process never became ready"
        time.sleep(rng.uniform(0.0, 1.5))
        process.kill()
        process.wait()
        reader.join(10)
        errors.seek(0)
        assert process.returncode == -signal.SIGKILL, (
            f"trial {trial}: the ingest failed before the kill:\n{errors.read()[-3000:]}"
        )
    return acknowledged


def reopen_and_count(path: str) -> tuple[Counter[str], str]:
    """Cells per batch tag as a new process sees them, and what that process logged."""
    opened = subprocess.run(
        [sys.executable, "-X", "faulthandler", "-c", COUNT, path], capture_output=True, text=True, timeout=300
    )
    assert opened.returncode == 0, f"reopening after a crash failed:\n{opened.stderr[-3000:]}"
    return Counter(json.loads(opened.stdout)), opened.stderr


def test_killed_ingests_keep_every_acknowledged_batch_and_no_partial_batch(tmp_path):
    rng = random.Random(1234)
    path = str(tmp_path / "store")
    acknowledged: list[str] = []
    logs = ""
    for trial in range(TRIALS):
        acknowledged += run_and_kill(path, trial, rng)
        per_batch, log = reopen_and_count(path)
        logs += log
        missing = [tag for tag in acknowledged if per_batch[tag] != BATCH]
        partial = {tag: n for tag, n in per_batch.items() if n != BATCH}
        assert not missing, f"trial {trial}: acknowledged batches lost or cut: {missing[:5]}"
        assert not partial, f"trial {trial}: partly present batches: {partial}"
    unacknowledged_but_present = len(per_batch) - len(set(acknowledged))
    record(
        "crash",
        trials=TRIALS,
        trials_with_batches_split_into_writes_of=f"{TRIALS // 2} x {SPLIT_CHUNK} cells",
        batch_size=BATCH,
        acknowledged_batches=len(acknowledged),
        cells_after=sum(per_batch.values()),
        batches_written_but_not_acknowledged=unacknowledged_but_present,
        reopens_that_rebuilt_the_vector_segment=logs.count("rebuilt the vector segment"),
        of_which_after_a_failed_read=logs.count("Chroma cannot read the vector segment"),
        reopens_that_repaired_a_write_in_flight=logs.count("left with a write in flight"),
    )
