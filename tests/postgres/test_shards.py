"""Several engine processes over one PostgreSQL database (`reference/store/shards.py`, `sharding.py`): the rule
routes each scope to one live member, a member answers another's scope with where to go, and a member that leaves
has its shards taken by the others; in-process here, and as real `magbench serve` processes in
`test_serve_shards.py`."""

from __future__ import annotations

import pytest

pytest.importorskip("psycopg", reason="the PostgreSQL store needs psycopg 3: pip install -e '.[postgres]'")

from reference import BackendUnavailableError, InvalidInputError, MemoryConfig, ScopeElsewhereError
from reference.encoders import MockEncoder
from reference.integrations.sharding import ShardedMemories
from reference.store.shards import owner_of, shard_of

SHARDS = 8
LEASE = 2.0


def test_a_member_that_leaves_moves_only_the_shards_it_held():
    members = [f"http://10.0.0.{n}/mcp" for n in range(5)]
    before = {shard: owner_of(shard, members) for shard in range(64)}
    after = {shard: owner_of(shard, members[:2] + members[3:]) for shard in range(64)}
    moved = {shard for shard in before if before[shard] != after[shard]}
    assert moved and moved == {shard for shard, owner in before.items() if owner == members[2]}
    assert len(set(before.values())) == 5  # every member serves some of 64 shards
    assert {shard_of(f"user:{n}", SHARDS) for n in range(200)} == set(range(SHARDS))
    assert shard_of("user:alice", SHARDS) == shard_of("user:alice", SHARDS)  # the same in every process


@pytest.fixture
def member(postgres_server):
    """Starts a member of deployment "fleet" at an address (closed at the end, whatever the test did)."""
    started: list[ShardedMemories] = []

    def start(address: str, shards: int = SHARDS) -> ShardedMemories:
        config = MemoryConfig(namespace="fleet", lease_seconds=LEASE)
        started.append(ShardedMemories(postgres_server.dsn, shards, address, MockEncoder(64), config).start())
        return started[-1]

    yield start
    for memories in started:
        memories.close()


def scope_served_by(owner: ShardedMemories) -> str:
    return next(f"user:{n}" for n in range(1000) if shard_of(f"user:{n}", SHARDS) in owner.held())


def test_a_scope_of_another_member_is_answered_with_its_address_and_its_shards_move_when_it_leaves(member):
    first = member("http://first/mcp")
    assert first.held() == list(range(SHARDS))  # alone, it serves every shard
    second = member("http://second/mcp")
    first.balance()  # gives away the shards the rule routes to the newcomer
    second.balance()  # and the newcomer takes them at once
    assert sorted(first.held() + second.held()) == list(range(SHARDS)) and first.held() and second.held()
    for shard in range(SHARDS):
        owner = first if owner_of(shard, ["http://first/mcp", "http://second/mcp"]) == "http://first/mcp" else second
        assert shard in owner.held()
    scope = scope_served_by(second)
    first.memory_for(scope_served_by(first)).add(["kept by the first"], scope=scope_served_by(first))
    second.memory_for(scope).add(["kept by the second"], scope=scope)
    with pytest.raises(ScopeElsewhereError, match="served at http://second/mcp") as refusal:
        first.memory_for(scope)
    assert refusal.value.address == "http://second/mcp"
    second.close()  # leaves: its rows released, so its shards are taken in the next pass, with no lease to wait
    first.balance()
    assert first.held() == list(range(SHARDS))
    assert [hit.text for hit in first.memory_for(scope).search("kept", scope=scope)] == ["kept by the second"]


def test_a_member_with_another_number_of_shards_is_refused(member):
    member("http://one/mcp")
    with pytest.raises(InvalidInputError, match="same number of shards"):
        member("http://two/mcp", shards=SHARDS * 2)


def test_a_shard_nobody_holds_yet_is_answered_with_a_retry(member):
    owner = member("http://alone/mcp")
    scope = scope_served_by(owner)
    owner._let_go(shard_of(scope, SHARDS))  # as between letting a lost shard go and taking it again
    with pytest.raises(BackendUnavailableError, match="being taken over by this process"):
        owner.memory_for(scope)
    owner.balance()
    assert shard_of(scope, SHARDS) in owner.held()
    owner.memory_for(scope).add(["served again"], scope=scope)
