"""SIGKILL an ingesting process at random points; every acknowledged batch survives whole, and no
batch is ever partly present."""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter

from reference import CellularMemory
from reference.encoders import MockEncoder
from tests.reliability.counts import record

TRIALS = 20
BATCH = 40

INGEST = textwrap.dedent(
    """
    import sys
    from reference import CellularMemory
    from reference.encoders import MockEncoder
    path, trial, BATCH = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    with CellularMemory(path=path, encoder=MockEncoder(64)) as memory:
        print("READY", flush=True)
        for batch in range(10_000):
            tag = f"t{trial}b{batch}"
            memory.add([f"{tag} note {i}" for i in range(BATCH)], ids=[f"{tag}-{i}" for i in range(BATCH)])
            print("ACK", tag, flush=True)
"""
)


def run_and_kill(path: str, trial: int, rng: random.Random) -> list[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", INGEST, path, str(trial), str(BATCH)], stdout=subprocess.PIPE, text=True
    )
    acknowledged: list[str] = []
    ready = threading.Event()

    def read() -> None:
        for line in process.stdout:
            if line.startswith("READY"):
                ready.set()
            elif line.startswith("ACK"):
                acknowledged.append(line.split()[1])

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert ready.wait(120), "the ingesting process never became ready"
    time.sleep(rng.uniform(0.0, 1.5))
    process.kill()
    process.wait()
    reader.join(10)
    return acknowledged


def test_killed_ingests_keep_every_acknowledged_batch_and_no_partial_batch(tmp_path, caplog):
    rng = random.Random(1234)
    path = str(tmp_path / "store")
    acknowledged: list[str] = []
    for trial in range(TRIALS):
        acknowledged += run_and_kill(path, trial, rng)
        with CellularMemory(path=path, encoder=MockEncoder(64)) as memory:  # reopen after every crash
            per_batch = Counter(cell.rsplit("-", 1)[0] for cell in memory.ids())
            missing = [tag for tag in acknowledged if per_batch[tag] != BATCH]
            partial = {tag: n for tag, n in per_batch.items() if n != BATCH}
            assert not missing, f"trial {trial}: acknowledged batches lost or cut: {missing[:5]}"
            assert not partial, f"trial {trial}: partly present batches: {partial}"
            unacknowledged_but_present = len(per_batch) - len(set(acknowledged))
    record(
        "crash",
        reopens_that_needed_a_second_read=sum("failed once" in message for message in caplog.messages),
        trials=TRIALS,
        batch_size=BATCH,
        acknowledged_batches=len(acknowledged),
        cells_after=len(acknowledged) * BATCH + unacknowledged_but_present * BATCH,
        batches_written_but_not_acknowledged=unacknowledged_but_present,
    )
