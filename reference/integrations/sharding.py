"""The shards of a deployment that this process serves (`magbench serve --postgres DSN --shards S`), by the rule of
`reference/store/shards.py`: a memory per shard it owns, and, for a scope it does not serve, where to go.

A background pass every renewal interval reads the live members and the shards held, closes the shards the rule
now gives to another live member (their rows released, so that member takes them at once) and those whose ownership
was lost, and opens the shards the rule gives to this process that nobody holds (a dead member's, once its lease has
run out). A shard opens with `resident_cells`, so taking it reads no cell: its scopes load as they are used.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import replace

from ..common.config import MemoryConfig
from ..common.errors import BackendUnavailableError, LeaseLostError, NamespaceOwnedError, ScopeElsewhereError
from ..encoders import Encoder
from ..memory import CellularMemory
from ..store.ownership import RENEWALS, Ownership
from ..store.shards import Members, owner_of, shard_namespace, shard_of

log = logging.getLogger(__name__)
RESIDENT_CELLS = 100_000
"""Cells kept in RAM per shard held (least recently used scopes go beyond it)."""


class ShardedMemories:
    """The shards this process serves, as member `address` of deployment `config.namespace` split into `shards`."""

    def __init__(self, dsn: str, shards: int, address: str, encoder: Encoder, config: MemoryConfig) -> None:
        if shards < 1:
            raise ValueError("shards must be at least 1")
        self.dsn, self.shards, self.address, self.encoder = dsn, shards, address, encoder
        self.config = config if config.resident_cells is not None else replace(config, resident_cells=RESIDENT_CELLS)
        self._members = Members(dsn, config.namespace, shards, address)
        self._live: list[str] = []
        self._held: dict[int, CellularMemory] = {}
        self._mutex = threading.Lock()
        self._stop = threading.Event()
        self._membership: Ownership | None = None
        self._balancer = threading.Thread(target=self._keep_balancing, name="shards", daemon=True)

    def start(self) -> ShardedMemories:
        """Join the members, take this process's shards, and keep them balanced in the background."""
        try:
            self._membership = self._members.join(self.config.lease_seconds)
            self.balance()
        except BaseException:
            self.close()
            raise
        self._balancer.start()
        return self

    def memory_for(self, scope: str) -> CellularMemory:
        """The memory of the shard that holds `scope`; `ScopeElsewhereError` naming the address of the member that
        serves it, or `BackendUnavailableError` while the shard is being taken (call again in a moment)."""
        shard = shard_of(scope, self.shards)
        with self._mutex:
            memory, live = self._held.get(shard), self._live
        if memory is not None:
            return memory
        where = f"scope {scope!r} (shard {shard} of {self.shards})"
        owner = owner_of(shard, live) if live else self.address
        if owner == self.address:
            raise BackendUnavailableError(f"{where} is being taken over by this process: call again in a moment")
        raise ScopeElsewhereError(f"{where} is served at {owner} (send its calls there)", owner)

    def held(self) -> list[int]:
        with self._mutex:
            return sorted(self._held)

    def balance(self) -> None:
        """One pass: shards given away or lost closed, shards this process is to serve and nobody holds opened."""
        try:
            live, taken = self._members.live(), self._members.held_shards()
        except BackendUnavailableError as error:
            log.warning("reading the members failed (the shards held stay as they are): %s", error)
            return
        with self._mutex:
            self._live = live
            held = dict(self._held)
        mine = {k for k in range(self.shards) if self.address in live and owner_of(k, live) == self.address}
        for shard, memory in held.items():
            if shard not in mine or not _serving(memory):
                self._let_go(shard)
        for shard in sorted(mine - held.keys() - taken):
            if self._stop.is_set():
                return
            config = replace(self.config, namespace=shard_namespace(self.config.namespace, shard))
            try:
                memory = CellularMemory(dsn=self.dsn, encoder=self.encoder, config=config)
            except (NamespaceOwnedError, BackendUnavailableError) as error:  # looked at again in the next pass
                log.warning("taking shard %d failed: %s", shard, error)
                continue
            with self._mutex:
                self._held[shard] = memory

    def _let_go(self, shard: int) -> None:
        """Close a shard (calls in flight finish first; later ones are routed again)."""
        with self._mutex:
            memory = self._held.pop(shard)
        try:
            memory.close()
        except BackendUnavailableError as error:  # its acknowledged writes are stored; what it had yet to flush is not
            log.warning("shard %d was let go without flushing: %s", shard, error)

    def _keep_balancing(self) -> None:
        while not self._stop.wait(self.config.lease_seconds / RENEWALS):
            try:
                self.balance()
            except Exception:  # the next pass tries again; a balancer that stopped would serve stale shards
                log.exception("a pass over the shards failed")

    def close(self) -> None:
        """Leave the members and close every shard held (their rows released: the others take them at once)."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self._balancer.is_alive():
            self._balancer.join()
        try:
            if self._membership is not None:
                self._membership.release()
        finally:
            try:
                for shard in self.held():
                    self._let_go(shard)
            finally:
                self._members.close()


def _serving(memory: CellularMemory) -> bool:
    """Whether this process still owns the shard's namespace (a paused process finds it taken when it runs again)."""
    lease = memory._store.lease
    try:
        if lease is not None:
            lease.check()
    except LeaseLostError:
        return False
    return True
