"""A stand-in Ollama server on 127.0.0.1 speaking Ollama's HTTP API (`/api/tags`, `/api/embed`).

Embeddings come from the hashed MockEncoder, scaled so they are *not* unit length (as Ollama's
legacy endpoint returns), so clients must normalise. `hang_seconds` makes every answer late, to
test client timeouts.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from reference.encoders import MockEncoder


class OllamaStandIn:
    def __init__(self, *, models: tuple[str, ...] = ("nomic-embed-text:latest",), dim: int = 768) -> None:
        self.models = models
        self.encoder = MockEncoder(dim)
        self.hang_seconds = 0.0
        self.requests: list[str] = []
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
                if self.path != "/api/embed":
                    self._reply(404, {"error": "not found"})
                elif request.get("model", "").split(":")[0] not in {m.split(":")[0] for m in standin.models}:
                    self._reply(404, {"error": f"model '{request.get('model')}' not found, try pulling it first"})
                else:
                    texts = request["input"] if isinstance(request["input"], list) else [request["input"]]
                    vectors = standin.encoder.encode(texts) * 3.7
                    self._reply(200, {"model": request["model"], "embeddings": vectors.tolist()})

        return Handler
