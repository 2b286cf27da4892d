"""`magbench chat`: an interactive memory agent with slash commands.

With no language model reachable it says so once; every memory command still works.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator

from reference import CellularMemory, MagneticError
from reference.agent import MemoryAgent, OllamaLLM
from reference.encoders import make_encoder
from reference.store import server_client

HELP = """commands:
  /help                          this list
  /status                        memory and model status
  /search QUERY                  search memory (memory mode: importance, recency, access)
  /remember [--fact] TEXT        store a memory (a fact has importance 0.9)
  /sleep [start SECONDS | stop]  one consolidation pass, or background sleep
  /conflicts                     contradictions found by sleep
  /clean                         delete every memory (asks for confirmation)
  /quit                          leave
anything else is sent to the model"""


class ChatSession:
    """The REPL's state and command dispatch, separate from terminal I/O (so it is testable)."""

    def __init__(self, agent: MemoryAgent, read_line: Callable[[], str | None], write: Callable[[str], None]) -> None:
        self.agent = agent
        self.memory = agent.memory
        self.read_line = read_line
        self.write = write
        self.commands: dict[str, Callable[[str], None]] = {
            "/help": self.help,
            "/status": self.status,
            "/search": self.search,
            "/remember": self.remember,
            "/sleep": self.sleep,
            "/conflicts": self.conflicts,
            "/clean": self.clean,
        }

    def loop(self) -> None:
        while (line := self.read_line()) is not None:
            line = line.strip()
            if line in ("/quit", "/exit"):
                break
            if line:
                self.handle(line)

    def handle(self, line: str) -> None:
        command, _, args = line.partition(" ")
        try:
            if command in self.commands:
                self.commands[command](args.strip())
            elif command in self.agent.tools:
                self.write(self.agent.run_command(line).text)
            elif command.startswith("/"):
                self.write(f"unknown command {command}; /help lists them")
            else:
                self.chat(line)
        except MagneticError as error:
            self.write(f"error: {error}")

    def help(self, _: str) -> None:
        tools = "\n".join(f"  {t.command:<30} {t.description}" for t in self.agent.tools.values())
        self.write(f"{HELP}\ntools:\n{tools}")

    def status(self, _: str) -> None:
        stats = self.memory.stats()
        model = self.agent.llm.name if self.agent.llm else "none reachable"
        sleeping = "running" if self.memory.sleeping else "off"
        self.write(
            f"cells {stats.cells} · groups {stats.groups} · encoder {stats.encoder} · "
            f"{'persistent' if stats.persistent else 'in memory'} · model {model} · sleep {sleeping}"
        )

    def search(self, query: str) -> None:
        if not query:
            self.write("usage: /search QUERY")
            return
        hits = self.memory.search(query, k=5, mode="memory")
        self.write("\n".join(f"{h.score:.3f}  {h.text}" for h in hits) or "nothing found")

    def remember(self, args: str) -> None:
        kind = "fact" if args.startswith("--fact ") else "episodic"
        text = args.removeprefix("--fact ").strip()
        if not text:
            self.write("usage: /remember [--fact] TEXT")
            return
        [cell] = self.memory.add(text, kind=kind)
        self.write(f"remembered ({kind}) {cell}")

    def sleep(self, args: str) -> None:
        action, _, value = args.partition(" ")
        if action == "start":
            try:
                interval = float(value or 60)
            except ValueError:
                self.write(f"usage: /sleep [start SECONDS | stop] (SECONDS is a number, not {value!r})")
                return
            self.memory.start_sleep(interval)
            self.write(f"sleeping in the background every {interval:g} s")
        elif action == "stop":
            self.memory.stop_sleep()
            self.write("background sleep stopped")
        elif action:
            self.write("usage: /sleep [start SECONDS | stop]")
        else:
            report = self.memory.consolidate()
            self.write(
                f"merged {len(report.merges)} groups ({report.groups_before} → {report.groups_after}), "
                f"moved {report.cells_moved} cells, found {len(report.conflicts)} new conflicts"
                + "".join(f"\n  judge error: {e}" for e in report.judge_errors)
            )

    def conflicts(self, _: str) -> None:
        found = self.memory.conflicts()
        lines = [f"{self.memory.get(c.first).text}  ✗  {self.memory.get(c.second).text}  ({c.reason})" for c in found]
        self.write("\n".join(lines) or "no conflicts recorded")

    def clean(self, _: str) -> None:
        count = len(self.memory)
        self.write(f"delete all {count} memories? type yes to confirm")
        if (self.read_line() or "").strip().lower() == "yes":
            ids = self.memory.ids()
            if ids:
                self.memory.delete(ids)
            self.write(f"deleted {count} memories")
        else:
            self.write("kept everything")

    def chat(self, text: str) -> None:
        if self.agent.llm is None:
            self.write("(not sent: no language model) — /remember and /search work")
            return
        reply = self.agent.reply(text)
        self.write(reply.text if reply.error is None else f"error: {reply.error}")


def run_chat(
    *, db: str | None, server: str | None, model: str, encoder_name: str, ollama_host: str | None, timeout: float
) -> int:
    client = server_client(server) if server else None
    encoder = make_encoder(encoder_name, ollama_host=ollama_host)
    probe = OllamaLLM(model, host=ollama_host, timeout=timeout)
    llm = probe if probe.reachable() else None
    if llm is None:
        print(f"No language model reachable at {probe.host} (model {model}): chat is off, memory commands work.")
    where = f"Chroma server {server}" if server else f"memory at {db}" if db else "in memory"
    with CellularMemory(path=db, encoder=encoder, client=client) as memory:
        agent = MemoryAgent(memory, llm)
        print(f"magbench chat · encoder {encoder.name} · {where} · /help")
        ChatSession(agent, _reader(), lambda text: print(printable(text))).loop()
    return 0


CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""Characters a terminal acts on (escape sequences, bells, carriage returns): never printed as they are."""


def printable(text: str) -> str:
    """Text for the terminal: control characters (from memories, models, files) shown escaped, e.g. \\x1b."""
    return CONTROL.sub(lambda match: match.group().encode("unicode_escape").decode("ascii"), text)


def _reader() -> Callable[[], str | None]:
    """Lines from the terminal or a pipe; bytes that are not text in the terminal's encoding (0xFF under
    the C locale) are replaced, never an error."""
    sys.stdin.reconfigure(errors="replace")  # type: ignore[union-attr]
    lines: Iterator[str] | None = None if sys.stdin.isatty() else iter(sys.stdin)

    def read() -> str | None:
        if lines is not None:
            return next(lines, None)
        try:
            return input("> ")
        except EOFError:
            return None

    return read
