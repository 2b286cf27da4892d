"""Three `magbench serve --postgres DSN --shards S` processes over one database and 8 MCP clients routed by scope
(each follows `ScopeElsewhereError` to the address it names), writing and searching at once; one process is killed
(SIGKILL) and another paused (SIGSTOP) mid-write, then resumed. Afterwards every acknowledged write is in the
database, every cell was written by the process that held its shard in that transaction (a trigger notes both: no
late write of the fenced process landed), no search answered with another scope's memory, and the shards of both
were taken over soon after the lease."""

from __future__ import annotations

import asyncio
import re
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

pytest.importorskip("psycopg", reason="the PostgreSQL store needs psycopg 3: pip install -e '.[postgres]'")
pytest.importorskip("mcp", reason="the serve extra: pip install 'magnetic-bench[serve]'")

import psycopg

from reference.store.pgdb import Database, make_schema
from reference.store.shards import owner_of, shard_of
from tests.serve.mcp_servers import HttpMemoryServer, http_client

pytestmark = pytest.mark.slow
SHARDS = 12
LEASE = 3.0
CALL_SECONDS = 2.0
"""A call unanswered this long (one to the paused process) is given up: its write is neither acknowledged nor
refused, and the client sends its next calls elsewhere."""
SUSPECT = 2 * LEASE
"""Seconds a client sends nothing to an address where a call went unanswered or broke (a redirect there is asked
again where it came from: the one that sent it learns within a lease that the address is no longer live)."""
CLIENTS, USERS = 8, 3
BOUND = 180.0
"""Seconds any awaited condition may take on a loaded machine before the test fails."""
TAKEN_WITHIN = 2 * LEASE + 10.0
"""From the kill to every shard held by the survivor: the lease, a paused owner's write left idle for at most a lease
(the database ends it), and room for a loaded machine."""
ELSEWHERE = re.compile(r"served at (\S+) \(send its calls there\)")


def wait_for(condition: Callable[[], bool], what: str, timeout: float = BOUND) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout:.0f} s: {what}"
        time.sleep(0.1)


@dataclass
class Attempt:
    tag: str
    user: str
    url: str
    sent: float
    answered: float | None = None
    outcome: str = "pending"  # acknowledged, refused (stored nothing), or unknown (broke before an answer)


class Line:
    """One MCP session to one address, in a task of its own that makes the calls queued for it one at a time: a
    call that is given up on leaves the session to finish it (or break) without disturbing the client."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._calls: asyncio.Queue[tuple[str, dict[str, object], asyncio.Future[object]]] = asyncio.Queue()
        self.task = asyncio.ensure_future(self._serve())

    async def _serve(self) -> None:
        async with http_client(self.url) as client:
            while True:
                tool, arguments, answer = await self._calls.get()
                try:
                    answer.set_result(await client.call_tool(tool, arguments))
                except Exception as error:  # the caller reads it from the future
                    answer.set_exception(error)

    def call(self, tool: str, arguments: dict[str, object]) -> asyncio.Future[object]:
        answer: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        self._calls.put_nowait((tool, arguments, answer))
        return answer


@dataclass
class Client:
    """One client: its users' writes and searches, each sent where its scope was last routed. A call unanswered in
    `CALL_SECONDS` is left to finish on its own (an answer that comes later still counts) and the scope is tried
    elsewhere."""

    number: int
    urls: list[str]
    stop: threading.Event
    attempts: list[Attempt] = field(default_factory=list)
    cross_scope: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    searches: int = 0

    def run(self) -> None:
        asyncio.run(self._run())

    async def _run(self) -> None:
        users = [f"c{self.number}u{n}" for n in range(USERS)]
        route = {user: self.urls[(self.number + n) % len(self.urls)] for n, user in enumerate(users)}
        lines: dict[str, Line] = {}
        left: list[Line] = []
        failed: dict[str, float] = {}  # when a call to each address last went unanswered or broke
        step = 0
        while not self.stop.is_set():
            user = users[step % USERS]
            url = route[user]
            step += 1
            if url not in lines or lines[url].task.done():
                lines[url] = Line(url)
            if step % 2:
                attempt = Attempt(f"c{self.number}w{step}", user, url, time.monotonic())
                self.attempts.append(attempt)
                arguments: dict[str, object] = {"content": f"{attempt.tag} for {user}: note {step}", "user_id": user}
                answer = lines[url].call("add_memory", arguments)
                answer.add_done_callback(lambda done, attempt=attempt: self._settle(attempt, done))
            else:
                answer = lines[url].call("search_memories", {"query": f"note for {user}", "k": 10, "user_id": user})
            done, _ = await asyncio.wait({answer}, timeout=CALL_SECONDS)
            if not done or answer.exception() is not None:  # unanswered, or broke: tried elsewhere for a while
                left.append(lines.pop(url))
                failed[url] = time.monotonic()
                trusted = [u for u in self.urls if time.monotonic() - failed.get(u, -SUSPECT) >= SUSPECT]
                route[user] = trusted[step % len(trusted)] if trusted else url
                await asyncio.sleep(0.1)
                continue
            result = answer.result()
            if not result.is_error:  # type: ignore[attr-defined]
                if not step % 2:
                    self._found(user, result)
                continue
            moved = self._refusal(result.content[0].text if result.content else "")  # type: ignore[attr-defined]
            if moved and time.monotonic() - failed.get(moved, -SUSPECT) >= SUSPECT:
                route[user] = moved
            else:  # refused, or routed where calls just failed: ask again in a moment
                await asyncio.sleep(0.1)
        for line in [*lines.values(), *left]:
            line.task.cancel()
        await asyncio.wait([line.task for line in [*lines.values(), *left]], timeout=BOUND)

    @staticmethod
    def _settle(attempt: Attempt, answer: asyncio.Future[object]) -> None:
        """A write's outcome, whenever its answer comes: acknowledged, refused (stored nothing), or unknown."""
        if answer.cancelled() or answer.exception() is not None:
            attempt.outcome = "unknown"
            return
        attempt.answered = time.monotonic()
        attempt.outcome = "refused" if answer.result().is_error else "acknowledged"  # type: ignore[attr-defined]

    def _found(self, user: str, result: object) -> None:
        self.searches += 1
        found = [hit["content"] for hit in result.structured_content["results"]]  # type: ignore[attr-defined]
        self.cross_scope += [text for text in found if f" for {user}: " not in text]

    def _refusal(self, message: str) -> str:
        """Where a refused call is to go ("": call again where it went), noting a refusal of no expected kind."""
        moved = ELSEWHERE.search(message)
        if moved is None and "LeaseLostError" not in message and "being taken over" not in message:
            self.unexpected.append(message)
        return moved.group(1) if moved else ""

    def acknowledged(self, after: float = 0.0) -> list[Attempt]:
        return [a for a in list(self.attempts) if a.outcome == "acknowledged" and a.sent > after]


def shard_holders(dsn: str) -> dict[int, str]:
    """Each shard of deployment "fleet" held now, and the holder (host and pid) of its row."""
    with psycopg.connect(dsn, autocommit=True) as connection:
        rows = connection.execute(
            "SELECT namespace, holder FROM magbench_owners WHERE namespace ~ '^fleet-[0-9]+$' AND expires > now()"
        ).fetchall()
    return {int(namespace.split("-")[1]): holder for namespace, holder in rows}


WATCH = """
CREATE TABLE written (id text, writer text, holder text);
CREATE FUNCTION note_writer() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
    INSERT INTO written SELECT NEW.id, current_setting('application_name'), holder
    FROM magbench_owners WHERE namespace = NEW.namespace;
    RETURN NEW;
END $$;
CREATE TRIGGER note_writer AFTER INSERT ON magbench_cells FOR EACH ROW EXECUTE FUNCTION note_writer();
"""
"""Each cell's writer (the connection's application name) and, in the same transaction, the holder of its shard."""


def watch_writers(dsn: str) -> None:
    database = Database(dsn)
    make_schema(database)
    database.close()
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute(WATCH)


def writers(dsn: str) -> list[tuple[str, str, str]]:
    """Each cell written: its text's tag, the process that wrote it, and the holder of its shard when it did."""
    with psycopg.connect(dsn, autocommit=True) as connection:
        rows = connection.execute(
            "SELECT split_part(c.text, ' ', 1), w.writer, w.holder FROM written w JOIN magbench_cells c USING (id)"
        ).fetchall()
    return [(str(tag), str(writer), str(holder)) for tag, writer, holder in rows]


def stored(dsn: str) -> dict[str, tuple[str, str, int]]:
    """Every cell of the deployment: its tag, and its shard namespace, scope and order."""
    with psycopg.connect(dsn, autocommit=True) as connection:
        rows = connection.execute(
            "SELECT text, namespace, scope, seq FROM magbench_cells WHERE namespace ~ '^fleet-[0-9]+$'"
        ).fetchall()
    return {text.split()[0]: (namespace, scope, seq) for text, namespace, scope, seq in rows}


def test_three_processes_eight_clients_one_killed_one_paused(postgres_server):
    dsn = postgres_server.dsn
    arguments = ("--postgres", dsn, "--namespace", "fleet", "--shards", str(SHARDS), "--lease", str(LEASE))
    servers = [HttpMemoryServer(*arguments) for _ in range(3)]
    watch_writers(dsn)
    for number, server in enumerate(servers):
        server.command = ["env", f"PGAPPNAME=serve{number}", *server.command]  # names its connections
        server.start()
    pids = {f"pid {server.process.pid}": server for server in servers}
    urls = [server.url for server in servers]

    def ruled(live: list[str]) -> bool:
        """Whether every shard is held by the process the rule routes it to among `live`."""
        held = shard_holders(dsn)
        by_url = {s.url: pid for pid, s in pids.items()}
        return all(
            shard in held and held[shard].endswith(by_url[owner_of(shard, sorted(live))]) for shard in range(SHARDS)
        )

    stop = threading.Event()
    clients = [Client(number, urls, stop) for number in range(CLIENTS)]
    threads = [threading.Thread(target=client.run, daemon=True) for client in clients]
    try:
        wait_for(lambda: ruled(urls), "each shard held by the process the rule routes it to")
        for thread in threads:
            thread.start()
        wait_for(lambda: all(len(c.acknowledged()) >= 5 for c in clients), "five writes acknowledged per client")

        by_shards = sorted(servers, key=lambda s: -sum(owner_of(k, sorted(urls)) == s.url for k in range(SHARDS)))
        killed, paused, survivor = by_shards
        assert sum(owner_of(k, sorted(urls)) == survivor.url for k in range(SHARDS)) < SHARDS
        moved = {
            f"c{c}u{u}"
            for c in range(CLIENTS)
            for u in range(USERS)
            if owner_of(shard_of(f"user:c{c}u{u}", SHARDS), sorted(urls)) != survivor.url
        }
        struck = time.monotonic()
        killed.process.send_signal(signal.SIGKILL)
        paused.process.send_signal(signal.SIGSTOP)

        def served_again() -> dict[str, float]:
            first: dict[str, float] = {}
            for client in clients:
                for attempt in client.acknowledged(after=struck):
                    if attempt.user in moved and attempt.url == survivor.url:
                        first[attempt.user] = min(first.get(attempt.user, float("inf")), attempt.answered or 0.0)
            return first

        wait_for(lambda: ruled([survivor.url]), "every shard held by the survivor")
        taken = time.monotonic() - struck
        wait_for(lambda: set(served_again()) == moved, "a write of every moved scope acknowledged by the survivor")
        slowest = max(served_again().values()) - struck
        paused.process.send_signal(signal.SIGCONT)
        resumed = time.monotonic()
        wait_for(lambda: ruled([survivor.url, paused.url]), "the resumed process serving its shards again")
        wait_for(
            lambda: all(len(c.acknowledged(after=resumed)) >= 3 for c in clients), "writes acknowledged after resuming"
        )
    finally:
        stop.set()
        for thread in threads:
            thread.join(BOUND)
        for server in servers:
            if server.process.poll() is None:
                server.process.send_signal(signal.SIGCONT)
            server.stop()
    assert not any(thread.is_alive() for thread in threads)

    cells = stored(dsn)
    attempts = {a.tag: a for client in clients for a in client.attempts}
    acknowledged = {tag for tag, a in attempts.items() if a.outcome == "acknowledged"}
    assert sorted(acknowledged - cells.keys()) == []  # every acknowledged write is in the database
    assert sorted(tag for tag in cells if attempts[tag].outcome == "refused") == []  # a refused write stored nothing
    assert sorted(tag for tag, (_, scope, _) in cells.items() if scope != f"user:{attempts[tag].user}") == []
    # A write lands only under its own process's ownership: no fenced process's late write.
    writer_of = {f"pid {server.process.pid}": f"serve{number}" for number, server in enumerate(servers)}
    fenced = [row for row in writers(dsn) if row[1] != writer_of.get(f"pid {row[2].rsplit(' ', 1)[-1]}")]
    assert fenced == [] and len(writers(dsn)) == len(cells)
    assert [text for client in clients for text in client.cross_scope] == []
    assert [message for client in clients for message in client.unexpected] == []
    assert all(client.searches for client in clients)
    assert taken < TAKEN_WITHIN, f"the shards were taken {taken:.1f} s after the kill"
    print(
        f"\nacknowledged {len(acknowledged)}, stored {len(cells)}, searches {sum(c.searches for c in clients)}; "
        f"the shards of the killed and the paused process taken {taken:.1f} s after (lease {LEASE:g} s), a write "
        f"of each of their scopes acknowledged by {slowest:.1f} s"
    )
