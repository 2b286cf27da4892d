"""One owner per namespace in a PostgreSQL database (`reference/store/ownership.py`), fenced by the database, against
a real server started by the test: a second opener is refused, a dead owner's namespace is taken by exactly one
taker, a late write of an owner that was taken over is refused by the database, and a takeover touches no cell."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from functools import partial

import pytest

pytest.importorskip("psycopg", reason="the PostgreSQL store needs psycopg 3: pip install -e '.[postgres]'")

import psycopg

from reference import BackendUnavailableError, CellularMemory, LeaseLostError, MemoryConfig, NamespaceOwnedError
from reference.encoders import MockEncoder
from reference.store.ownership import RENEW, Ownership
from tests.threads import run_concurrently

LEASE = 2.0
"""Seconds: short, so that takeovers are quick here, yet renewed in time on a loaded machine."""
TRIALS = 3
BATCH = 20


def open_memory(dsn: str, namespace: str, lease: float = LEASE, **config: object) -> CellularMemory:
    settings = MemoryConfig(namespace=namespace, lease_seconds=lease, **config)
    return CellularMemory(dsn=dsn, encoder=MockEncoder(64), config=settings)


def stop_renewing(memory: CellularMemory) -> Ownership:
    """The memory's ownership, its renewals stopped (as when its process is paused or cut off)."""
    ownership = memory._store.lease
    assert isinstance(ownership, Ownership)
    ownership._stop.set()
    ownership._renewer.join(timeout=10)
    return ownership


def test_a_second_opener_is_refused_while_the_owner_lives_and_opens_at_once_after_close(postgres_server):
    dsn = postgres_server.dsn
    with open_memory(dsn, "owned") as owner:
        owner.add(["Maria Lopez lives in Lisbon."])
        for _ in range(3):
            with pytest.raises(NamespaceOwnedError, match="another live process"):
                open_memory(dsn, "owned")
        owner.add(["still served by the owner"])
    with open_memory(dsn, "owned", lease=60.0) as reopened:  # released: no wait for a lease of 60 s to run out
        assert len(reopened) == 2


def take(dsn: str, namespace: str, barrier: threading.Barrier, taken: list[Ownership]) -> None:
    barrier.wait()
    with contextlib.suppress(NamespaceOwnedError):
        taken.append(Ownership.acquire(dsn, namespace, LEASE))


def test_a_dead_owners_namespace_is_taken_by_exactly_one_of_many_takers(postgres_server):
    dsn, won = postgres_server.dsn, []
    for trial in range(TRIALS):
        dead = open_memory(dsn, f"taken{trial}")
        dead.add(["the dead owner's note"])
        stop_renewing(dead)
        barrier, taken = threading.Barrier(4), []
        assert not run_concurrently(*[partial(take, dsn, f"taken{trial}", barrier, taken) for _ in range(4)])
        won.append(len(taken))
        for ownership in taken:
            assert ownership.epoch == dead._store.lease.epoch + 1
            ownership.check()
            ownership.release()
    assert won == [1] * TRIALS


def test_a_late_write_of_an_owner_that_was_taken_over_is_refused_by_the_database(postgres_server):
    """The old owner's own checks are passed (as by a process paused right after them): only the database stands
    between its writes and the new owner's cells."""
    dsn = postgres_server.dsn
    old = open_memory(dsn, "late")
    old.add(["the first version"], ids=["x"])
    ownership = stop_renewing(old)
    new = open_memory(dsn, "late")  # taken once the old lease has run out
    new.update("x", text="the new owner's version")
    ownership._deadline = float("inf")  # its own clock has not told it yet (paused right after its checks)
    with pytest.raises(LeaseLostError, match="no longer served by this process"):
        old.update("x", text="the old owner's late version")
    with pytest.raises(LeaseLostError):
        old.add(["a late new cell"], ids=["late"])
    with pytest.raises(LeaseLostError):
        old.delete("x")
    old.close()
    new.close()
    with open_memory(dsn, "late") as reopened:
        assert reopened.ids() == ["x"] and reopened.get("x").text == "the new owner's version"


def test_a_takeover_touches_no_cell(postgres_server):
    """A takeover is one update of the owner row: it succeeds as a role that may read or write nothing else, so its
    cost cannot grow with the cells."""
    dsn = postgres_server.dsn
    dead = open_memory(dsn, "untouched")
    dead.add([f"note {n}" for n in range(500)])
    epoch = stop_renewing(dead).epoch
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute("DROP ROLE IF EXISTS taker")
        connection.execute("CREATE ROLE taker LOGIN")
        connection.execute("GRANT SELECT, INSERT, UPDATE ON magbench_owners TO taker")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # the role can reach no cell
            psycopg.connect(dsn.replace("postgres@", "taker@"), autocommit=True).execute(
                "SELECT count(*) FROM magbench_cells"
            )
    ownership = Ownership.acquire(dsn.replace("postgres@", "taker@"), "untouched", LEASE)
    assert ownership.epoch == epoch + 1
    ownership.release()
    dead.close()


OWNER = textwrap.dedent(
    """
    import sys
    from reference import CellularMemory, LeaseLostError, MemoryConfig
    from reference.encoders import MockEncoder
    dsn, namespace, trial = sys.argv[1:4]
    batch, lease = int(sys.argv[4]), float(sys.argv[5])
    config = MemoryConfig(namespace=namespace, lease_seconds=lease)
    memory = CellularMemory(dsn=dsn, encoder=MockEncoder(64), config=config)
    print("READY", flush=True)
    for number in range(100_000):
        tag = f"{trial}b{number}"
        try:
            memory.add([f"{tag} note {i}" for i in range(batch)], ids=[f"{tag}-{i}" for i in range(batch)])
        except LeaseLostError as error:
            print("LOST", error, flush=True)
            try:
                memory.search("note", k=1)
                print("SEARCHED", flush=True)
            except LeaseLostError:
                print("SEARCH REFUSED", flush=True)
            break
        print(f"ACK {tag}", flush=True)
    """
)


class Owner:
    """A process that opens a namespace and writes batches into it, printing each one it was acknowledged."""

    def __init__(self, dsn: str, namespace: str, trial: str) -> None:
        arguments = [dsn, namespace, trial, str(BATCH), str(LEASE)]
        self.process = subprocess.Popen(
            [sys.executable, "-c", OWNER, *arguments], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self.acknowledged: list[str] = []
        self.lines: list[str] = []
        self._ready = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        assert self._ready.wait(120), "the owner never became ready"
        assert self.process.poll() is None, self.process.stderr.read()[-3000:]

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line)
            if line.startswith("READY"):
                self._ready.set()
            elif line.startswith("ACK ") and line.endswith("\n"):  # a kill can cut the last line short
                self.acknowledged.append(line.split()[1])
        self._ready.set()

    def wait_for(self, acknowledged: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while len(self.acknowledged) < acknowledged:
            assert time.monotonic() < deadline and self.process.poll() is None, "".join(self.lines)
            time.sleep(0.02)

    def finish(self, timeout: float = 60) -> None:
        """Wait for the process to end (killed if it does not: a test failing must not leave it writing)."""
        try:
            self.process.wait(timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
        self._reader.join(10)


def batches(memory: CellularMemory) -> Counter[str]:
    return Counter(cell.rsplit("-", 1)[0] for cell in memory.ids())


def test_a_killed_owners_namespace_is_served_again_after_its_lease_and_nothing_acknowledged_is_lost(postgres_server):
    dsn = postgres_server.dsn
    owner = Owner(dsn, "killed", "k")
    owner.wait_for(3)
    with pytest.raises(NamespaceOwnedError):  # another process while the owner lives
        open_memory(dsn, "killed")
    owner.process.send_signal(signal.SIGKILL)
    owner.finish()
    with open_memory(dsn, "killed") as taker:  # waits for the lease to run out, then takes it
        per_batch = batches(taker)
        taker.check_invariants()
    assert [tag for tag in owner.acknowledged if per_batch[tag] != BATCH] == []  # every acknowledged batch, whole
    assert {tag: n for tag, n in per_batch.items() if n != BATCH} == {}  # and no batch in part


def test_an_owner_paused_past_its_lease_is_fenced_and_writes_nothing_after_a_takeover(postgres_server):
    dsn = postgres_server.dsn
    owner = Owner(dsn, "paused", "p")
    owner.wait_for(3)
    owner.process.send_signal(signal.SIGSTOP)
    time.sleep(0.2)  # what it printed before the pause is read
    acknowledged_before = list(owner.acknowledged)
    try:
        taker = open_memory(dsn, "paused")  # its lease stops moving: taken once it has run out
        taker.add(["written by the process that took over"], ids=["taker-0"])
        seen = set(taker.ids())
    finally:
        owner.process.send_signal(signal.SIGCONT)
    owner.finish()
    output = "".join(owner.lines)
    # A write committed before the pause may be acknowledged once the owner runs again: the new owner loaded it.
    late = owner.acknowledged[len(acknowledged_before) :]
    assert owner.acknowledged[: len(acknowledged_before)] == acknowledged_before and len(late) <= 1, output
    assert "LOST" in output and "SEARCH REFUSED" in output, output
    per_batch = batches(taker)
    assert per_batch.pop("taker") == 1
    assert {tag: n for tag, n in per_batch.items() if n != BATCH} == {}  # a batch is whole or absent
    assert [tag for tag in owner.acknowledged if per_batch[tag] != BATCH] == [], "an acknowledged write was not loaded"
    taker.close()
    with open_memory(dsn, "paused") as reopened:  # nothing landed behind the new owner's back
        assert set(reopened.ids()) == seen


def test_an_owner_paused_inside_a_renewal_does_not_hold_its_namespace_past_its_lease(postgres_server):
    """A process stopped between its renewal's update and its commit holds the owner row's lock; a takeover, which
    changes the row's key, waits on that lock. The server ends the idle renewal after a lease, so the namespace is
    taken once the lease has run out, as after any other pause."""
    dsn = postgres_server.dsn
    with open_memory(dsn, "paused-renewing") as owner:
        ownership = stop_renewing(owner)
        renewing, resume = threading.Event(), threading.Event()
        ended: list[BackendUnavailableError] = []

        def paused_in_a_renewal() -> None:
            try:
                with ownership._database.transaction("renewing") as cursor:
                    cursor.execute(RENEW, {"namespace": "paused-renewing", "epoch": ownership.epoch, "ttl": LEASE})
                    renewing.set()
                    resume.wait(timeout=60)
            except BackendUnavailableError as error:  # the server ended the idle transaction: its commit fails
                ended.append(error)

        pause = threading.Thread(target=paused_in_a_renewal)
        pause.start()
        try:
            assert renewing.wait(timeout=10)
            taken = Ownership.acquire(dsn, "paused-renewing", LEASE)  # its waits for the row are bounded
            assert taken.epoch == ownership.epoch + 1
            taken.release()
        finally:
            resume.set()
            pause.join(timeout=10)
        assert len(ended) == 1
