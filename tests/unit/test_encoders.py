"""Encoders: Mock determinism and similarity, Ollama through the real client and a stand-in server."""

import time

import numpy as np
import pytest

from reference import BackendUnavailableError, CellularMemory, InvalidInputError
from reference.encoders import MockEncoder, OllamaEncoder, make_encoder


def test_mock_is_deterministic_unit_length_and_similar_for_shared_words():
    encoder = MockEncoder(dim=128)
    a, b, c = encoder.encode(["the red fox jumps", "the red fox sleeps", "quarterly tax filing"])
    np.testing.assert_array_equal(a, MockEncoder(dim=128).encode(["the red fox jumps"])[0])
    np.testing.assert_allclose([np.linalg.norm(a)], [1.0], rtol=1e-6)
    assert a @ b > 0.5 > abs(a @ c)


def test_mock_never_returns_a_zero_vector():
    assert np.linalg.norm(MockEncoder().encode(["!!! ??? …"])[0]) == pytest.approx(1.0)


def test_ollama_encoder_normalises_vectors_from_the_server(ollama_standin):
    encoder = OllamaEncoder(host=ollama_standin.url, timeout=5)
    vectors = encoder.encode(["hello world", "hello there"])
    assert vectors.shape == (2, 768) and encoder.dim == 768
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    assert "POST /api/embed" in ollama_standin.requests


def test_memory_runs_on_ollama_embeddings(ollama_standin):
    with CellularMemory(encoder=OllamaEncoder(host=ollama_standin.url, timeout=5)) as mem:
        mem.add(["the red fox jumps", "quarterly tax filing"])
        assert mem.search("a red fox", k=1)[0].text == "the red fox jumps"


def test_dead_ollama_gives_a_clear_error(dead_port):
    encoder = OllamaEncoder(host=f"http://127.0.0.1:{dead_port}", timeout=2)
    with pytest.raises(BackendUnavailableError, match="ollama serve"):
        encoder.encode(["hello"])
    assert not encoder.reachable()


def test_hanging_ollama_times_out(ollama_standin):
    ollama_standin.hang_seconds = 30
    encoder = OllamaEncoder(host=ollama_standin.url, timeout=0.5)
    started = time.monotonic()
    with pytest.raises(BackendUnavailableError, match=r"(?i)timeout|timed out"):
        encoder.encode(["hello"])
    assert time.monotonic() - started < 10


def test_missing_model_is_reported(ollama_standin):
    with pytest.raises(BackendUnavailableError, match="not found"):
        OllamaEncoder("no-such-model", host=ollama_standin.url, timeout=5).encode(["x"])


def test_failed_encoding_adds_nothing():
    class Broken:
        name, dim = "broken", 384

        def encode(self, texts):
            raise BackendUnavailableError("encoder down")

    with CellularMemory(encoder=Broken()) as mem:
        with pytest.raises(BackendUnavailableError):
            mem.add(["a", "b"])
        assert len(mem) == 0


def test_make_encoder_by_name_and_auto_prefers_reachable_ollama(ollama_standin, monkeypatch):
    assert make_encoder("mock").name == "mock-384"
    monkeypatch.setenv("OLLAMA_HOST", ollama_standin.url)
    assert make_encoder("auto").name == "ollama:nomic-embed-text"
    with pytest.raises(InvalidInputError):
        make_encoder("word2vec")


@pytest.mark.minilm
def test_auto_falls_back_to_minilm_when_ollama_is_down(dead_port, monkeypatch, caplog):
    monkeypatch.setenv("OLLAMA_HOST", f"http://127.0.0.1:{dead_port}")
    with caplog.at_level("INFO", logger="reference.encoders"):
        encoder = make_encoder("auto")
    assert encoder.name == "minilm"
    assert "not reachable" in caplog.text
