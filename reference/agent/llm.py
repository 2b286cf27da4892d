"""Language-model backends for the agent: Ollama (real) and a scripted one (tests, offline demos)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..common.errors import BackendUnavailableError
from ..common.ollama_connection import OllamaConnection


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class LLMReply:
    content: str
    tool_calls: list[ToolCall] = field(default_factory=list)


class LLM(Protocol):
    name: str

    def chat(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None = None) -> LLMReply:
        """One reply, possibly asking for tool calls."""
        ...

    def stream(self, messages: Sequence[dict[str, Any]]) -> Iterator[str]:
        """The reply's text as it is generated."""
        ...


class OllamaLLM:
    """Chat through the `ollama` client (tool calling and streaming), with a finite timeout."""

    def __init__(self, model: str = "llama3.2", *, host: str | None = None, timeout: float = 120.0) -> None:
        self.connection = OllamaConnection(model, host=host, timeout=timeout)
        self.model, self.name, self.host = model, self.connection.name, self.connection.host

    def chat(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None = None) -> LLMReply:
        response = self.connection.call(
            self.connection.client.chat, model=self.model, messages=list(messages), tools=list(tools or []) or None
        )
        calls = [ToolCall(c.function.name, dict(c.function.arguments or {})) for c in response.message.tool_calls or []]
        return LLMReply(response.message.content or "", calls)

    def stream(self, messages: Sequence[dict[str, Any]]) -> Iterator[str]:
        try:
            for chunk in self.connection.client.chat(model=self.model, messages=list(messages), stream=True):
                if chunk.message.content:
                    yield chunk.message.content
        except Exception as error:  # a stream can also break half-way
            raise self.connection.unavailable(error) from error

    def reachable(self) -> bool:
        return self.connection.reachable()


class ScriptedLLM:
    """Replies from a script, in order; records every request. For tests and offline demos."""

    name = "scripted"

    def __init__(self, replies: Iterable[LLMReply | str]) -> None:
        self._replies = iter(replies)
        self.requests: list[list[dict[str, Any]]] = []

    def chat(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None = None) -> LLMReply:
        self.requests.append([dict(m) for m in messages])
        try:
            reply = next(self._replies)
        except StopIteration:
            raise BackendUnavailableError("the scripted LLM has no replies left") from None
        return LLMReply(reply) if isinstance(reply, str) else reply

    def stream(self, messages: Sequence[dict[str, Any]]) -> Iterator[str]:
        for word in self.chat(messages).content.split(" "):
            yield word + " "
