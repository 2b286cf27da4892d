"""A stand-in Ollama server on 127.0.0.1 speaking Ollama's HTTP API (`/api/tags`, `/api/embed`,
`/api/chat` with tool calls and streaming).

Embeddings come from the hashed MockEncoder, scaled so they are *not* unit length (as Ollama's
legacy endpoint returns), so clients must normalise. Chat answers come from `brain(messages,
tools)`, which a test sets: it returns `{"content": str, "tool_calls": [{"name": …, "arguments": {…}}]}`.
`hang_seconds` makes every answer late, to test client timeouts. Every chat request is kept in
`chats` so tests can check what the client sent. `answering_brain` reads and judges answers deterministically.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from reference.encoders import MockEncoder


class OllamaStandIn:
    def __init__(self, *, models: tuple[str, ...] = ("nomic-embed-text:latest",), dim: int = 768) -> None:
        self.models = models
        self.encoder = MockEncoder(dim)
        self.hang_seconds = 0.0
        self.requests: list[str] = []
        self.chats: list[dict] = []
        self.brain: Callable[[list[dict], list[dict] | None], dict] = echo_brain
        self._release = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> OllamaStandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _reply(self, status: int, body: dict) -> None:
                if standin.hang_seconds:
                    standin._release.wait(standin.hang_seconds)
                payload = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:
                standin.requests.append(f"GET {self.path}")
                if self.path == "/api/tags":
                    self._reply(200, {"models": [{"name": m, "model": m} for m in standin.models]})
                else:
                    self._reply(404, {"error": "not found"})

            def do_POST(self) -> None:
                standin.requests.append(f"POST {self.path}")
                request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                if self.path == "/api/chat":
                    self._chat(request)
                elif self.path != "/api/embed":
                    self._reply(404, {"error": "not found"})
                elif request.get("model", "").split(":")[0] not in {m.split(":")[0] for m in standin.models}:
                    self._reply(404, {"error": f"model '{request.get('model')}' not found, try pulling it first"})
                else:
                    texts = request["input"] if isinstance(request["input"], list) else [request["input"]]
                    vectors = standin.encoder.encode(texts) * 3.7
                    self._reply(200, {"model": request["model"], "embeddings": vectors.tolist()})

            def _chat(self, request: dict) -> None:
                standin.chats.append(request)
                answer = standin.brain(request.get("messages", []), request.get("tools"))
                message = {"role": "assistant", "content": answer.get("content", "")}
                if answer.get("tool_calls"):
                    message["tool_calls"] = [{"function": call} for call in answer["tool_calls"]]
                base = {"model": request.get("model", ""), "created_at": "2026-01-01T00:00:00Z"}
                if not request.get("stream", True):
                    self._reply(200, {**base, "message": message, "done": True, "done_reason": "stop"})
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/x-ndjson")
                self.end_headers()
                words = message["content"].split(" ")
                for index, word in enumerate(words):
                    chunk = {"role": "assistant", "content": word + (" " if index < len(words) - 1 else "")}
                    self.wfile.write((json.dumps({**base, "message": chunk, "done": False}) + "\n").encode())
                    self.wfile.flush()
                final = {
                    "role": "assistant",
                    "content": "",
                    **({"tool_calls": message["tool_calls"]} if "tool_calls" in message else {}),
                }
                self.wfile.write(
                    (json.dumps({**base, "message": final, "done": True, "done_reason": "stop"}) + "\n").encode()
                )

        return Handler


def echo_brain(messages: list[dict], tools: list[dict] | None) -> dict:
    """The default answer: repeat the last user message, without the data blocks the agent put before it."""
    last = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
    return {"content": f"You said: {last.rpartition('>')[2].strip() if '</data-' in last else last}"}


def answering_brain(messages: list[dict], tools: list[dict] | None) -> dict:
    """A reader and a judge of answers (`harness.measure.reader`, `harness.measure.answer_judge`), deterministic.

    Reader: answers with the text of the first quoted memory, its speaker left out ("No information available"
    when none). Judge under the published "be generous" prompt: accepts everything, with a reason. Judge under
    the strict prompt: accepts an answer only when it holds every word of the gold answer."""
    prompt = messages[-1]["content"] if messages else ""
    if "<memories>" in prompt:
        memories = prompt.split("<memories>")[1].split("</memories>")[0].strip().splitlines()
        first = json.loads(memories[0])["text"] if memories else "No information available"
        return {"content": first.partition(": ")[2] or first}
    if "be generous" in prompt:
        return {"content": json.dumps({"label": "CORRECT"})}
    data = json.loads(next(line for line in prompt.splitlines() if line.startswith("{") and "gold_answer" in line))
    words = set(re.findall(r"\w+", data["gold_answer"].lower()))
    held = words <= set(re.findall(r"\w+", data["generated_answer"].lower()))
    reason = "it states the gold fact" if held else "it leaves out part of the gold answer"
    return {"content": json.dumps({"reason": reason, "label": "CORRECT" if held else "WRONG"})}
