"""One owner per namespace on a Chroma server (`reference/store/lease.py`), against a real `chroma run`: a second
opener is refused, a killed or paused owner's namespace is taken over by one process, and nothing acknowledged is
lost."""

from __future__ import annotations

import contextlib
import multiprocessing
import random
import signal
import statistics
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
from chromadb.errors import NotFoundError

from harness.measure.server_processes import ChromaServer
from reference import CellularMemory, LeaseLostError, MemoryConfig, NamespaceOwnedError
from reference.common.chroma import server_client
from reference.encoders import MockEncoder
from reference.store.collection import CONFIGURATION, cells_name
from reference.store.handover import SET_ASIDE
from reference.store.lease import RENEWALS, Lease
from tests.reliability.counts import record
from tests.threads import run_concurrently

LEASE = 1.0
"""Seconds: short, so that takeovers are quick here."""
TAKEOVER = LEASE * (1 + 1 / RENEWALS)
"""How long a taker watches a still beat before it takes over (the lease and its grace)."""
BATCH = 20


def open_memory(address: str, namespace: str, lease: float = LEASE) -> CellularMemory:
    config = MemoryConfig(namespace=namespace, lease_seconds=lease)
    return CellularMemory(client=server_client(address), encoder=MockEncoder(64), config=config)


def collection_names(address: str) -> set[str]:
    return {collection.name for collection in server_client(address).list_collections()}


def at_once(address: str, threads: int, attempt: Callable[[Any], object], refusal: type[Exception]) -> list[object]:
    """`attempt(client)` on `threads` threads released together, each with a client of its own: what the attempts
    that were not refused returned."""
    clients = [server_client(address) for _ in range(threads)]
    barrier, won = threading.Barrier(threads), []

    def run(client: Any) -> None:
        barrier.wait()
        with contextlib.suppress(refusal):
            won.append(attempt(client))

    assert not run_concurrently(*[partial(run, client) for client in clients])
    return won


def test_creating_a_collection_is_won_by_exactly_one_of_many_concurrent_creators(chroma_server):
    """The primitive the lease stands on: Chroma creates a collection by name in one write transaction. The
    losers' error is untyped in Chroma 1.5 (a plain `ChromaError`): what counts is how many created it."""
    winners = [
        len(at_once(chroma_server.address, 4, lambda client, n=race: client.create_collection(f"race_{n}"), Exception))
        for race in range(50)
    ]
    assert winners == [1] * 50


def test_a_second_opener_is_refused_while_the_owner_lives_and_opens_at_once_after_close(chroma_server):
    address = chroma_server.address
    with open_memory(address, "owned") as owner:
        ids = owner.add(["Maria Lopez lives in Lisbon."])
        for _ in range(3):
            with pytest.raises(NamespaceOwnedError, match=r"'owned'.*another live process \(.+ pid \d+\)"):
                open_memory(address, "owned")
        assert [hit.id for hit in owner.search("Lisbon", k=1)] == ids  # the owner goes on serving
        ids += owner.add(["Written after the refusals."])
        with open_memory(address, "owned-too") as other:  # another namespace is another lease
            other.add(["a note elsewhere"])
        assert "owned_owner" in collection_names(address)
    assert "owned_owner" not in collection_names(address)  # released on close: the next opener need not wait
    with open_memory(address, "owned") as next_owner:
        assert sorted(next_owner.ids()) == sorted(ids)


OPENS = 20


def race(address: str, namespace: str, barrier, outcomes) -> None:
    """Open at the barrier's release, report, close once every racer has tried; `OPENS` times."""
    for trial in range(OPENS):
        client = server_client(address)
        barrier.wait()
        try:
            lease, refusal = Lease.acquire(client, namespace, LEASE), ""
        except NamespaceOwnedError as error:
            lease, refusal = None, str(error)
        outcomes.put((trial, lease is not None, refusal))
        barrier.wait()  # all have tried
        if lease is not None:
            lease.release()
        barrier.wait()  # the namespace is free again


def test_processes_opening_one_namespace_at_once_exactly_one_opens_each_time(chroma_server):
    racers, context = 3, multiprocessing.get_context("spawn")
    barrier, outcomes = context.Barrier(racers), context.Queue()
    processes = [
        context.Process(target=race, args=(chroma_server.address, "raced", barrier, outcomes)) for _ in range(racers)
    ]
    for process in processes:
        process.start()
    trials: list[list[tuple[bool, str]]] = [[] for _ in range(OPENS)]
    for _ in range(racers * OPENS):
        trial, opened, refusal = outcomes.get(timeout=120)
        trials[trial].append((opened, refusal))
    for process in processes:
        process.join(60)
        assert process.exitcode == 0
    opened = [sum(won for won, _ in trial) for trial in trials]
    assert opened == [1] * OPENS, f"trials where not exactly one opened: {trials}"
    assert all("another live process" in refusal for trial in trials for won, refusal in trial if not won)
    record("server_one_owner", trials=OPENS, processes=racers, opened_by_exactly_one=opened.count(1))


TAKERS, TAKEOVERS = 4, 8


def test_a_dead_owners_namespace_is_taken_over_by_exactly_one_of_many_takers(chroma_server):
    address, won = chroma_server.address, []
    for _ in range(TAKEOVERS):
        dead = Lease.acquire(server_client(address), "taken", LEASE)
        dead._stop.set()  # its renewals stop as when its process is killed: the lease stays until it runs out
        leases = at_once(address, TAKERS, lambda client: Lease.acquire(client, "taken", LEASE), NamespaceOwnedError)
        won.append(len(leases))
        for lease in leases:
            assert isinstance(lease, Lease)
            lease.check()  # the winner holds it
            lease.release()
    assert won == [1] * TAKEOVERS
    assert not {name for name in collection_names(address) if name.startswith("taken_owner")}  # none left behind


OWNER = textwrap.dedent(
    """
    import sys
    from reference import CellularMemory, LeaseLostError, MemoryConfig
    from reference.common.chroma import server_client
    from reference.encoders import MockEncoder
    address, namespace, trial = sys.argv[1:4]
    batch, lease = int(sys.argv[4]), float(sys.argv[5])
    config = MemoryConfig(namespace=namespace, lease_seconds=lease)
    memory = CellularMemory(client=server_client(address), encoder=MockEncoder(64), config=config)
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

    def __init__(self, address: str, namespace: str, trial: str, lease: float = LEASE) -> None:
        arguments = [address, namespace, trial, str(BATCH), str(lease)]
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


def test_a_killed_owners_namespace_is_served_again_after_its_lease_and_nothing_acknowledged_is_lost(chroma_server):
    address, rng = chroma_server.address, random.Random(46)
    acknowledged: list[str] = []
    takeovers: list[float] = []
    for trial in range(3):
        owner = Owner(address, "killed", f"t{trial}")
        with pytest.raises(NamespaceOwnedError):  # another process while the owner lives
            open_memory(address, "killed")
        while not owner.acknowledged:
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 0.5))
        owner.process.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        owner.finish()
        with open_memory(address, "killed") as taker:
            takeovers.append(time.monotonic() - killed)
            per_batch = batches(taker)
            taker.check_invariants()
        acknowledged += owner.acknowledged
        assert [tag for tag in acknowledged if per_batch[tag] != BATCH] == []  # every acknowledged batch, whole
        assert {tag: n for tag, n in per_batch.items() if n != BATCH} == {}  # and no batch in part
    record(
        "server_killed_owner",
        trials=len(takeovers),
        lease_seconds=LEASE,
        watched_before_takeover_seconds=TAKEOVER,
        kill_to_served_seconds_median=round(statistics.median(takeovers), 3),
        kill_to_served_seconds_max=round(max(takeovers), 3),
        acknowledged_batches=len(acknowledged),
    )


def test_an_owner_paused_past_its_lease_is_fenced_and_writes_nothing_after_a_takeover(chroma_server):
    address = chroma_server.address
    owner = Owner(address, "paused", "p")
    while len(owner.acknowledged) < 3:
        time.sleep(0.05)
    owner.process.send_signal(signal.SIGSTOP)
    time.sleep(0.2)  # what it printed before the pause is read
    acknowledged_before = list(owner.acknowledged)
    try:
        taker = open_memory(address, "paused")  # its beat stands still: taken over after the lease and grace
        taker.add(["written by the process that took over"], ids=["taker-0"])
        seen = set(taker.ids())
    finally:
        owner.process.send_signal(signal.SIGCONT)
    owner.finish()
    output = "".join(owner.lines)
    # A write in flight when the owner was paused may be acknowledged once it runs again: only if it reached the
    # server before the takeover, so that the new owner loaded it.
    late = owner.acknowledged[len(acknowledged_before) :]
    assert owner.acknowledged[: len(acknowledged_before)] == acknowledged_before and len(late) <= 1, output
    assert "LOST" in output and "SEARCH REFUSED" in output, output
    per_batch = batches(taker)
    assert per_batch.pop("taker") == 1
    assert {tag: n for tag, n in per_batch.items() if n != BATCH} == {}  # a batch is whole or absent
    assert [tag for tag in owner.acknowledged if per_batch[tag] != BATCH] == [], "an acknowledged write was not loaded"
    taker.close()
    with open_memory(address, "paused") as reopened:  # nothing landed behind the new owner's back
        assert set(reopened.ids()) == seen


def test_an_owner_cut_off_past_its_lease_refuses_calls_and_serves_again_when_the_server_returns(tmp_path):
    with ChromaServer(tmp_path / "data") as server:
        memory = open_memory(server.address, "cutoff")
        acknowledged = memory.add([f"before the outage {i}" for i in range(5)])
        server.stop()
        time.sleep(LEASE * 1.5)
        with pytest.raises(LeaseLostError, match="could not be renewed"):
            memory.search("before the outage", k=3)
        with pytest.raises(LeaseLostError, match="could not be renewed"):
            memory.add(["written while cut off"])
        server.start()  # the same folder and port; nobody took the namespace meanwhile
        deadline = time.monotonic() + 60
        while True:
            try:
                assert memory.search("before the outage", k=3)
                break
            except LeaseLostError:
                assert time.monotonic() < deadline, "the lease was never renewed after the server returned"
                time.sleep(LEASE / RENEWALS)
        acknowledged += memory.add(["after the outage"])
        memory.close()
        with open_memory(server.address, "cutoff") as reopened:
            assert sorted(reopened.ids()) == sorted(acknowledged)


def test_an_owner_whose_lease_was_taken_refuses_every_call_for_good_and_leaves_the_new_owner_alone(chroma_server):
    address = chroma_server.address
    first = open_memory(address, "lost")
    first.add(["the first owner's note"])
    first._store.lease._stop.set()  # its renewals stop (cut off from the server, as far as the server can tell)
    second = open_memory(address, "lost")
    second.add(["the second owner's note"])
    assert not first._store.lease.renew()  # the server answers again: the lease is gone, and so is this process's claim
    with pytest.raises(LeaseLostError, match="no longer served by this process"):
        first.search("note", k=1)
    with pytest.raises(LeaseLostError, match="no longer served by this process"):
        first.add(["too late"])
    first.close()  # releasing a lost lease touches nothing of the new owner's
    with pytest.raises(NamespaceOwnedError):
        open_memory(address, "lost")
    assert len(second) == 2 and second.search("note", k=2)
    second.close()
    with open_memory(address, "lost") as reopened:
        assert len(reopened) == 2 and not any("too late" in reopened.get(i).text for i in reopened.ids())


def test_an_update_that_reaches_the_server_after_a_takeover_does_not_undo_the_new_owners(chroma_server):
    address = chroma_server.address
    old = open_memory(address, "late")
    old.add(["the first version"], ids=["x"])
    cells = old._store.store.store.cells  # the fence's store's collection
    send, paused, outcome = threading.Event(), threading.Event(), []
    upsert = cells.upsert

    def paused_before_the_server(*args: Any, **kwargs: Any) -> None:  # past the lease check, not yet sent
        paused.set()
        send.wait(60)
        upsert(*args, **kwargs)

    def update() -> None:
        try:
            old.update("x", text="the old owner's version")
            outcome.append("acknowledged")
        except LeaseLostError:
            outcome.append("refused")

    cells.upsert = paused_before_the_server
    writer = threading.Thread(target=update)
    writer.start()
    assert paused.wait(60)
    old._store.lease._stop.set()  # its beat stands still, as when its whole process is paused
    new = open_memory(address, "late")
    new.update("x", text="the new owner's version")
    send.set()
    writer.join(60)
    assert outcome == ["refused"]
    new.close()
    with open_memory(address, "late") as reopened:
        assert reopened.get("x").text == "the new owner's version"


def test_ledger_writes_that_reach_the_server_after_a_takeover_fail(chroma_server):
    address = chroma_server.address
    old = open_memory(address, "ledger")
    old.add(["alice's note"], scope="alice")
    ledger = old._store.store.store.ledger._collection  # the handle an in-flight request of the old owner uses
    old._store.lease._stop.set()  # its beat stands still, as when its whole process is paused
    new = open_memory(address, "ledger", lease=5.0)
    bounds = (new._store.store.store.ledger.seq_bound, new._store.store.store.ledger.group_bound)
    with pytest.raises(NotFoundError):  # a late bound, lower than the new owner's
        ledger.modify(metadata={"layout": 2, "seq": 0, "groups": 0})
    with pytest.raises(NotFoundError):  # a late forget of a scope that holds cells
        ledger.delete(ids=["scope:alice"])
    new.close()
    with open_memory(address, "ledger") as reopened:
        ledger_now = reopened._store.store.store.ledger
        assert (ledger_now.seq_bound, ledger_now.group_bound) == bounds and ledger_now.scopes() == ["alice"]
        assert reopened.count(scope="alice") == 1


def test_a_takeover_cut_short_while_moving_the_cells_is_finished_by_the_next_opener(chroma_server):
    address = chroma_server.address
    with open_memory(address, "moved") as first:
        written = set(first.add([f"note {i}" for i in range(30)]))
    client = server_client(address)
    cells = client.get_collection(cells_name("moved"))
    cells.modify(name=cells_name("moved") + SET_ASIDE)  # a taker set them aside, copied a third and died
    part = cells.get(include=["embeddings", "documents", "metadatas"], limit=10)
    client.create_collection(cells_name("moved"), configuration=CONFIGURATION, metadata=cells.metadata).add(
        ids=part["ids"], embeddings=part["embeddings"], documents=part["documents"], metadatas=part["metadatas"]
    )
    with open_memory(address, "moved") as reopened:
        assert set(reopened.ids()) == written
        assert {reopened.get(cell).text for cell in written} == {f"note {i}" for i in range(30)}
        reopened.check_invariants()
    assert cells_name("moved") + SET_ASIDE not in collection_names(address)


def test_an_in_process_client_takes_no_lease(tmp_path):
    """Embedded and ephemeral Chroma are this process's alone (an embedded store by path holds an OS lock)."""
    from reference.common.chroma import persistent_client

    client = persistent_client(str(tmp_path))
    with CellularMemory(client=client, encoder=MockEncoder(64), config=MemoryConfig(namespace="local")) as memory:
        memory.add(["kept without a lease"])
        assert memory._store.lease is None
    assert "local_owner" not in {c.name for c in client.list_collections()}
