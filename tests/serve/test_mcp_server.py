"""`magbench serve` through the real `mcp` client: every tool over stdio and HTTP, bad input answered as tool
errors with nothing changed, tokens bound to scopes, many clients at once, and a SIGKILL losing nothing."""

from __future__ import annotations

import asyncio
import random
import subprocess
import threading

import httpx
import pytest

pytest.importorskip("mcp", reason="the serve extra: pip install 'magnetic-bench[serve]'")

from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecurityMiddleware
from starlette.requests import Request

from reference import CellularMemory
from reference.common.errors import InvalidInputError
from reference.encoders import MockEncoder
from reference.integrations.mcp_server import (
    DATA_NOT_INSTRUCTIONS,
    MAX_OWNER_CHARS,
    Grants,
    scope_name,
    transport_security,
)
from tests.serve.mcp_servers import (
    ENV,
    SERVE,
    HttpMemoryServer,
    call,
    http_client,
    refused,
    stdio_client,
    write_tokens,
)

TOOLS = {"add_memory", "search_memories", "get_memory", "update_memory", "delete_memory", "list_memories"}


async def every_tool(client) -> None:
    listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(listed) == TOOLS
    for name in ("search_memories", "get_memory", "list_memories"):
        assert DATA_NOT_INSTRUCTIONS in (listed[name].description or "")
    assert {"content", "kind", "importance", "metadata", "user_id", "agent_id", "run_id"} <= set(
        listed["add_memory"].input_schema["properties"]
    )
    who = {"user_id": "alice", "agent_id": "planner"}
    paris = await call(
        client, "add_memory", content="Alice lives in Paris", kind="fact", metadata={"topic": "home"}, **who
    )
    assert paris["scope"] == "user:alice/agent:planner"
    tea = await call(client, "add_memory", content="Alice drinks green tea every morning", **who)
    await call(client, "add_memory", content="Bob lives in Rome", user_id="bob")

    hits = (await call(client, "search_memories", query="where does Alice live", k=5, **who))["results"]
    assert {hit["id"] for hit in hits} == {paris["id"], tea["id"]}
    filtered = await call(client, "search_memories", query="Alice", filters={"topic": "home"}, **who)
    assert [hit["id"] for hit in filtered["results"]] == [paris["id"]]

    got = await call(client, "get_memory", memory_id=paris["id"], **who)
    assert (got["content"], got["kind"], got["metadata"], got["updated_at"]) == (
        "Alice lives in Paris", "fact", {"topic": "home"}, None
    )  # fmt: skip
    moved = await call(client, "update_memory", memory_id=paris["id"], content="Alice moved to Berlin", **who)
    assert moved["content"] == "Alice moved to Berlin" and moved["updated_at"] is not None

    first = await call(client, "list_memories", limit=1, **who)
    second = await call(client, "list_memories", limit=1, cursor=first["next_cursor"], **who)
    assert second["next_cursor"] is None
    assert {m["id"] for m in first["memories"] + second["memories"]} == {paris["id"], tea["id"]}

    assert (await call(client, "delete_memory", memory_id=tea["id"], **who)) == {"deleted": 1}
    left = await call(client, "list_memories", **who)
    assert [m["content"] for m in left["memories"]] == ["Alice moved to Berlin"]
    bob = await call(client, "list_memories", user_id="bob")
    assert [m["content"] for m in bob["memories"]] == ["Bob lives in Rome"]


def test_every_tool_over_stdio():
    async def session() -> None:
        async with stdio_client() as client:
            await every_tool(client)

    asyncio.run(session())


def test_every_tool_over_http(tmp_path):
    with HttpMemoryServer("--db", str(tmp_path / "memory")) as server:

        async def session() -> None:
            async with http_client(server.url) as client:
                await every_tool(client)

        asyncio.run(session())


BAD_CALLS = [
    ("add_memory", {"content": ""}, "empty"),
    ("add_memory", {"content": "   "}, "empty"),
    ("add_memory", {"content": 5}, "content"),
    ("add_memory", {"content": "x", "kind": "opinion"}, "kind"),
    ("add_memory", {"content": "x", "importance": 2}, "importance"),
    ("add_memory", {"content": "x", "metadata": {"n": 10**30}}, "integer"),
    ("add_memory", {"content": "x", "metadata": "topic"}, "metadata"),
    ("add_memory", {"content": "x", "user_id": ""}, "user_id"),
    ("add_memory", {"content": "x", "user_id": 7}, "user_id"),
    ("add_memory", {"content": "x", "run_id": "r" * 129}, "run_id has 129 characters"),
    ("search_memories", {"query": "tea", "k": 0}, "k"),
    ("search_memories", {"query": "tea", "k": 101}, "k"),
    ("search_memories", {"query": "tea", "k": "ten"}, "k"),
    ("search_memories", {"query": ""}, "empty"),
    ("search_memories", {"query": "tea", "filters": {"$bogus": 1}}, "$bogus"),
    ("search_memories", {"query": "tea", "filters": {"n": {"$gt": "a", "$lt": 1}}}, "$gt"),
    ("search_memories", {"query": "tea", "mode": "fast"}, "mode"),
    ("get_memory", {"memory_id": "no-such-id"}, "no memory"),
    ("get_memory", {"memory_id": ""}, "memory_id"),
    ("update_memory", {"memory_id": "no-such-id", "content": "x"}, "unknown"),
    ("update_memory", {"memory_id": "KNOWN"}, "needs"),
    ("update_memory", {"memory_id": "KNOWN", "content": ""}, "empty"),
    ("delete_memory", {"memory_id": "no-such-id"}, "no memory"),
    ("list_memories", {"limit": 0}, "limit"),
    ("no_such_tool", {}, "no_such_tool"),
]


def test_bad_input_is_a_tool_error_and_changes_nothing(tmp_path):
    with HttpMemoryServer("--db", str(tmp_path / "memory")) as server:

        async def session() -> None:
            async with http_client(server.url) as client:
                known = (await call(client, "add_memory", content="Alice drinks green tea"))["id"]
                before = await call(client, "list_memories")
                for tool, arguments, fragment in BAD_CALLS:
                    arguments = {key: known if value == "KNOWN" else value for key, value in arguments.items()}
                    message = await refused(client, tool, **arguments)
                    assert fragment.lower() in message.lower(), (tool, arguments, message)
                    assert "\n" not in message.strip() or "validation" in message.lower(), message
                assert await call(client, "list_memories") == before
                hits = await call(client, "search_memories", query="green tea")
                assert [hit["id"] for hit in hits["results"]] == [known]

        asyncio.run(session())


def test_a_token_reaches_only_the_scopes_it_is_bound_to(tmp_path):
    tokens = write_tokens(tmp_path / "tokens.json", {"alice-token": [{"user_id": "alice"}], "admin-token": [{}]})
    with HttpMemoryServer("--tokens", str(tokens)) as server:

        async def session() -> None:
            async with http_client(server.url, "admin-token") as admin:
                bobs = (await call(admin, "add_memory", content="Bob's PIN is 4711", user_id="bob"))["id"]
            async with http_client(server.url, "alice-token") as alice:
                mine = (await call(alice, "add_memory", content="Alice's PIN is 1234", user_id="alice"))["id"]
                for tool, arguments in [
                    ("add_memory", {"content": "x", "user_id": "bob"}),
                    ("search_memories", {"query": "PIN", "user_id": "bob"}),
                    ("get_memory", {"memory_id": bobs, "user_id": "bob"}),
                    ("update_memory", {"memory_id": bobs, "content": "x", "user_id": "bob"}),
                    ("delete_memory", {"memory_id": bobs, "user_id": "bob"}),
                    ("list_memories", {"user_id": "bob"}),
                    ("list_memories", {}),  # the default user is another scope too
                ]:
                    assert "may not use" in await refused(alice, tool, **arguments)
                # another scope's id named from her own scope reads as absent, and stays as it was
                assert "no memory" in await refused(alice, "get_memory", memory_id=bobs, user_id="alice")
                assert "no memory" in await refused(alice, "delete_memory", memory_id=bobs, user_id="alice")
                assert "unknown" in await refused(alice, "update_memory", memory_id=bobs, content="x", user_id="alice")
                hits = await call(alice, "search_memories", query="PIN", user_id="alice", k=10)
                assert [hit["id"] for hit in hits["results"]] == [mine]
            async with http_client(server.url, "admin-token") as admin:
                bob = await call(admin, "get_memory", memory_id=bobs, user_id="bob")
                assert bob["content"] == "Bob's PIN is 4711"

        asyncio.run(session())
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic alice-token"}):
            answer = httpx.post(server.url, headers=headers, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert answer.status_code == 401


def test_a_loopback_server_in_any_form_serves_no_other_host_or_origin(tmp_path):
    """A web page whose name resolves to 127.0.0.2 (DNS rebinding) reaches a server bound there without tokens
    unless the Host and Origin are checked against the bind address."""
    with HttpMemoryServer("--db", str(tmp_path / "memory"), host="127.0.0.2") as server:
        for evil, status in (({"Host": "evil.example"}, 421), ({"Origin": "http://evil.example"}, 403)):
            answer = httpx.post(server.url, headers=evil, json=INITIALIZE, timeout=30)
            assert answer.status_code == status, (evil, answer.status_code, answer.text)

        async def session() -> None:
            for evil in ({"Host": "evil.example"}, {"Origin": "http://evil.example"}):
                with pytest.raises(Exception):  # noqa: B017 - the client reports the refusal its own way
                    async with http_client(server.url, headers=evil) as client:
                        await call(client, "add_memory", content="planted by a web page")
            async with http_client(server.url, headers={"Origin": f"http://127.0.0.2:{server.port}"}) as client:
                await call(client, "add_memory", content="the owner's note")
                listed = await call(client, "list_memories")
                assert [m["content"] for m in listed["memories"]] == ["the owner's note"]

        asyncio.run(session())


INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "page", "version": "1"}},
}  # fmt: skip


def guarded(host: str, headers: dict[str, str]) -> int | None:
    """The status the DNS-rebinding guard of a server bound to `host` answers a GET with (None: let through)."""
    scope = {"type": "http", "method": "GET", "path": "/mcp", "headers": [
        (key.lower().encode(), value.encode()) for key, value in headers.items()
    ]}  # fmt: skip
    answer = asyncio.run(TransportSecurityMiddleware(transport_security(host)).validate_request(Request(scope)))
    return None if answer is None else answer.status_code


@pytest.mark.parametrize(
    ("host", "own"),
    [
        ("127.0.0.2", "127.0.0.2:8765"),
        ("127.255.255.254", "127.255.255.254:8765"),
        ("0:0:0:0:0:0:0:1", "[0:0:0:0:0:0:0:1]:8765"),
        ("0:0:0:0:0:0:0:1", "[::1]:8765"),
        ("::1", "[::1]:8765"),
        ("127.0.0.1", "127.0.0.1"),
        ("localhost", "localhost:8765"),
    ],
)
def test_the_rebinding_guard_follows_the_bind_address(host, own):
    assert guarded(host, {"Host": own}) is None
    assert guarded(host, {"Host": own, "Origin": f"http://{own}"}) is None
    assert guarded(host, {"Host": "evil.example"}) == 421
    assert guarded(host, {"Host": "evil.example:8765"}) == 421
    assert guarded(host, {"Host": own, "Origin": "http://evil.example"}) == 403


@pytest.mark.parametrize(
    ("token", "reason"),
    [
        (" spaced-token ", "holds ' ' (character 1)"),
        ("tökén", "holds 'ö' (character 2)"),
        ("tok en", "' ' (character 4)"),
        ("", "empty"),
    ],
)
def test_a_token_no_client_can_send_is_refused_at_load(token, reason, tmp_path):
    path = write_tokens(tmp_path / "tokens.json", {"good-token": [{}], token: [{"user_id": "alice"}]})
    with pytest.raises(InvalidInputError, match="token 2 ") as refused_load:
        Grants.load(path)
    assert reason in str(refused_load.value) and (not token.strip() or token.strip() not in str(refused_load.value))


def test_a_padded_token_loads_and_authenticates(tmp_path):
    tokens = write_tokens(tmp_path / "tokens.json", {"Zm9v+/_~.-bar==": [{"user_id": "alice"}]})
    assert Grants.load(tokens).allows("Zm9v+/_~.-bar==", {"user_id": "alice"})
    with HttpMemoryServer("--tokens", str(tokens)) as server:

        async def session() -> None:
            async with http_client(server.url, "Zm9v+/_~.-bar==") as alice:
                written = await call(alice, "add_memory", content="Alice's note", user_id="alice")
                assert written["scope"] == "user:alice"
                assert "may not use" in await refused(alice, "list_memories", user_id="bob")

        asyncio.run(session())


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--http", "--host", "0.0.0.0"], "refusing to serve 0.0.0.0 without --tokens"),
        (["--tokens", "missing.json"], "cannot read the tokens file"),
    ],
)
def test_an_unsafe_or_broken_setup_is_refused_in_one_line(arguments, message, tmp_path):
    done = subprocess.run([*SERVE, *arguments], env=ENV, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 2
    assert message in done.stderr and done.stderr.count("\n") == 1, done.stderr


def test_scope_names_are_unambiguous():
    names = {
        scope_name(owners, "default")
        for owners in (
            {"user_id": "a/agent:b"},
            {"user_id": "a", "agent_id": "b"},
            {"user_id": "a:b"},
            {"agent_id": "a"},
            {},
            {"user_id": "default"},
        )
    }
    assert len(names) == 5  # only {} and the default user's own name are one scope
    assert scope_name({"user_id": "alice", "run_id": "7"}, "default") == "user:alice/run:7"


@pytest.mark.parametrize(
    "owners",
    [
        {"user_id": "東京都千代田区の山田太郎さんの個人的な記憶です"},  # 23 CJK characters
        {"user_id": "é" * 60},
        {"user_id": "u" * 68, "agent_id": "a" * 68, "run_id": "r" * 68},  # 204 characters typed
        {"user_id": "😀" * MAX_OWNER_CHARS, "agent_id": "😀" * MAX_OWNER_CHARS, "run_id": "😀" * MAX_OWNER_CHARS},
    ],
)
def test_an_owner_within_the_typed_limit_has_a_scope_whatever_its_encoding(owners):
    name = scope_name(owners, "default")
    with CellularMemory(encoder=MockEncoder()) as memory:
        [written] = memory.add("a note", scope=name)
        assert memory.ids(scope=name) == [written]


@pytest.mark.parametrize("key", ["user_id", "agent_id", "run_id"])
def test_an_owner_over_the_limit_is_refused_by_its_name(key):
    with pytest.raises(ToolError, match=rf"^{key} has 129 characters, above the limit of {MAX_OWNER_CHARS}$"):
        scope_name({"user_id": "alice", key: "é" * (MAX_OWNER_CHARS + 1)}, "default")
    with pytest.raises(ToolError, match=rf"^{key} holds '\\ud800', which UTF-8 cannot encode$"):
        scope_name({key: "x\ud800"}, "default")


CLIENTS, CALLS = 8, 200


@pytest.mark.slow
def test_many_clients_at_once_lose_nothing_and_see_only_their_scope(tmp_path):
    path = tmp_path / "memory"
    with HttpMemoryServer("--db", str(path)) as server:
        kept: dict[str, dict[str, str]] = {}

        async def client_session(number: int) -> None:
            user, rng = f"user{number}", random.Random(number)
            mine: dict[str, str] = {}
            async with http_client(server.url) as client:
                for step in range(CALLS):
                    roll = rng.random()
                    if roll < 0.4 or not mine:
                        content = f"note {step} of {user}: {rng.choice(['tea', 'trains', 'rain', 'chess'])}"
                        mine[(await call(client, "add_memory", content=content, user_id=user))["id"]] = content
                    elif roll < 0.8:
                        hits = await call(client, "search_memories", query="tea trains", k=10, user_id=user)
                        assert {hit["id"] for hit in hits["results"]} <= set(mine), "a hit from another scope"
                    elif roll < 0.9:
                        memory_id = rng.choice(sorted(mine))
                        got = await call(client, "get_memory", memory_id=memory_id, user_id=user)
                        assert got["content"] == mine[memory_id]
                    elif roll < 0.95:
                        memory_id = rng.choice(sorted(mine))
                        mine[memory_id] = f"updated {step} of {user}"
                        await call(client, "update_memory", memory_id=memory_id, content=mine[memory_id], user_id=user)
                    else:
                        memory_id = rng.choice(sorted(mine))
                        await call(client, "delete_memory", memory_id=memory_id, user_id=user)
                        del mine[memory_id]
                listed = await call(client, "list_memories", limit=500, user_id=user)
                assert {m["id"]: m["content"] for m in listed["memories"]} == mine
            kept[user] = mine

        async def all_clients() -> None:
            await asyncio.gather(*(client_session(number) for number in range(CLIENTS)))

        asyncio.run(all_clients())
    with CellularMemory(path=str(path), encoder=MockEncoder()) as memory:
        memory.check_invariants()
        for user, mine in kept.items():
            scope = scope_name({"user_id": user}, "default")
            assert {record.id: record.text for record in memory.get_many(memory.ids(scope=scope))} == mine


@pytest.mark.slow
def test_a_sigkill_during_writes_loses_no_acknowledged_memory(tmp_path):
    path = tmp_path / "memory"
    acknowledged: list[tuple[str, str]] = []
    server = HttpMemoryServer("--db", str(path)).start()
    enough = threading.Event()

    async def writer() -> None:
        try:
            async with http_client(server.url) as client:
                for step in range(10_000):
                    written = await call(client, "add_memory", content=f"memory {step}")
                    acknowledged.append((written["id"], f"memory {step}"))
                    if len(acknowledged) >= 150:
                        enough.set()
        except Exception:
            if not killing.is_set():
                raise  # the server is alive: this failure is a defect, not the kill
            # the server died under a call: that call was never acknowledged

    killing = threading.Event()  # set before the kill (a Popen another thread waits on polls as alive)
    killer = threading.Thread(target=lambda: (enough.wait(120), killing.set(), server.kill()))
    killer.start()
    asyncio.run(writer())
    killer.join()
    assert len(acknowledged) >= 150
    with HttpMemoryServer("--db", str(path)) as again:

        async def check() -> None:
            async with http_client(again.url) as client:
                for memory_id, content in acknowledged:
                    assert (await call(client, "get_memory", memory_id=memory_id))["content"] == content

        asyncio.run(check())
    with CellularMemory(path=str(path), encoder=MockEncoder()) as memory:
        memory.check_invariants()
