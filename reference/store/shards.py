"""Several engine processes over one PostgreSQL database, each serving the scopes the rule routes to it.

The rule, which every process applies alike (and a client may too, reading the same table):
- a scope's shard is `sha256(scope) mod S`, with S fixed for the deployment; shard k is the namespace `{name}-k`,
  owned and fenced by the database as any namespace is (`ownership.py`);
- the live members are the rows `{name}/members/S/{address}` of `magbench_owners` whose lease has not run out:
  each process holds its own row under the same lease and renewals as a namespace, so a process that dies or is
  paused leaves the members once its lease has run out, by the database's clock;
- a shard's owner is the live member with the highest `sha256(k, address)` (rendezvous hashing): a member that joins
  or leaves moves only the shards it wins or held.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from ..common.errors import InvalidInputError
from .ownership import Ownership
from .pgdb import Database, make_schema

LIVE = "SELECT namespace FROM magbench_owners WHERE starts_with(namespace, %s) AND expires > now()"


def shard_of(scope: str, shards: int) -> int:
    """The shard that holds `scope`'s cells."""
    return int.from_bytes(hashlib.sha256(scope.encode()).digest()[:8], "big") % shards


def owner_of(shard: int, members: Sequence[str]) -> str:
    """The member (an address) that serves `shard` among the live `members` (at least one)."""
    return max(members, key=lambda member: hashlib.sha256(f"{shard}\n{member}".encode()).digest())


def shard_namespace(name: str, shard: int) -> str:
    return f"{name}-{shard}"


class Members:
    """The members of deployment `name` (S = `shards`) as the table lists them, and this process's own row."""

    def __init__(self, dsn: str, name: str, shards: int, address: str) -> None:
        self.dsn, self.name, self.shards, self.address = dsn, name, shards, address
        self._prefix = f"{name}/members/"
        self._database = Database(dsn)
        make_schema(self._database)

    def join(self, ttl: float) -> Ownership:
        """Hold this process's row (renewed until released); refused while live members divide the scopes into
        another number of shards (they would route them elsewhere)."""
        others = {key.split("/")[2] for key in self._live_keys()} - {str(self.shards)}
        if others:
            raise InvalidInputError(
                f"{self.name!r} is served by processes that divide its scopes into {sorted(others)} shards, not "
                f"{self.shards}: start every process of a deployment with the same number of shards"
            )
        return Ownership.acquire(self.dsn, f"{self._prefix}{self.shards}/{self.address}", ttl)

    def live(self) -> list[str]:
        """The addresses of the live members with this number of shards, sorted."""
        ours = f"{self.shards}/"
        return sorted(key.split("/", 3)[3] for key in self._live_keys() if key.split("/")[2] + "/" == ours)

    def held_shards(self) -> set[int]:
        """The shards some process holds now (by the database's clock)."""
        prefix = f"{self.name}-"
        with self._database.transaction(f"reading the owners of {self.name!r}") as cursor:
            rows = cursor.execute(LIVE, (prefix,)).fetchall()
        return {int(key[len(prefix) :]) for (key,) in rows if key[len(prefix) :].isdigit()}

    def _live_keys(self) -> list[str]:
        with self._database.transaction(f"reading the members of {self.name!r}") as cursor:
            return [str(key) for (key,) in cursor.execute(LIVE, (self._prefix,)).fetchall()]

    def close(self) -> None:
        self._database.close()
