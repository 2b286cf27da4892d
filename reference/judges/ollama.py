"""An LLM conflict judge over Ollama: asks for JSON naming contradicting pairs and why.

Invalid JSON (or JSON of the wrong shape) is retried once; a second failure raises `JudgeError`,
which consolidation records in its report instead of crashing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..common.errors import BackendUnavailableError
from ..common.ollama_connection import OllamaConnection
from .base import Conflict, JudgeError, Statement, ordered

PROMPT = """You check a memory for contradictions. Statements, numbered:
{statements}

Two statements contradict when both cannot be true at the same time about the same subject ("I" and "my" in a
statement refer to whoever said it).
Answer with JSON only: {{"conflicts": [{{"a": <number>, "b": <number>, "reason": "<why>"}}]}}
Use an empty list when nothing contradicts."""


class OllamaJudge:
    def __init__(self, model: str = "llama3.2", *, host: str | None = None, timeout: float = 60.0) -> None:
        self.connection = OllamaConnection(model, host=host, timeout=timeout)
        self.model, self.name, self.host = model, self.connection.name, self.connection.host

    def judge(self, statements: Sequence[Statement]) -> list[Conflict]:
        if len(statements) < 2:
            return []
        listing = "\n".join(
            f"{i + 1}. {s.text}" + (f" (said by {s.speaker})" if s.speaker else "") for i, s in enumerate(statements)
        )
        messages = [{"role": "user", "content": PROMPT.format(statements=listing)}]
        problem = ""
        for _attempt in range(2):
            try:
                reply = self.connection.call(
                    self.connection.client.chat,
                    model=self.model,
                    messages=messages,
                    format="json",
                    options={"temperature": 0},
                )
            except BackendUnavailableError as error:  # the judge cannot answer
                raise JudgeError(str(error)) from error
            try:
                return self._conflicts(reply.message.content or "", statements)
            except (ValueError, KeyError, TypeError) as error:
                problem = f"{type(error).__name__}: {error}"
                messages += [
                    {"role": "assistant", "content": reply.message.content or ""},
                    {"role": "user", "content": f"That was not valid ({problem}). Answer with the JSON only."},
                ]
        raise JudgeError(f"{self.name} gave no valid JSON after a retry ({problem})")

    def _conflicts(self, content: str, statements: Sequence[Statement]) -> list[Conflict]:
        found = json.loads(content)["conflicts"]
        conflicts = []
        for item in found:
            a, b = int(item["a"]) - 1, int(item["b"]) - 1
            if not (0 <= a < len(statements) and 0 <= b < len(statements)) or a == b:
                raise ValueError(f"statement numbers {item['a']}, {item['b']} are out of range")
            conflicts.append(ordered(statements[a], statements[b], str(item.get("reason", "")), self.name))
        return conflicts
