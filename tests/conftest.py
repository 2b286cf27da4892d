"""Fixtures shared by every suite: encoders, stand-in servers, per-test Chroma directories."""

from __future__ import annotations

import os
import socket

import pytest

from reference.encoders import MockEncoder

os.environ.setdefault("HF_HUB_OFFLINE", "1")
SLOW_SUITES = ("tests/reliability/", "tests/integration/test_cli.py", "tests/integration/test_sleep_concurrency.py")
"""Crash, soak, fuzz, churn, the CLI's benchmark runs and the sleep races: most of the suite's time."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the slow suites `slow`: the README's test command runs them; `-m "not slow"` leaves them out."""
    for item in items:
        if item.nodeid.startswith(SLOW_SUITES):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def mock_encoder() -> MockEncoder:
    return MockEncoder(dim=384)


@pytest.fixture(scope="session")
def minilm_encoder():
    from reference.encoders import SentenceTransformerEncoder

    return SentenceTransformerEncoder()


@pytest.fixture
def ollama_standin():
    from tests.standins import OllamaStandIn

    with OllamaStandIn() as server:
        yield server


@pytest.fixture
def dead_port() -> int:
    """A 127.0.0.1 port where nothing listens."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory):
    """A Chroma server for the module (each xdist worker starts its own, on its own port and folder)."""
    from harness.measure.servers import ChromaServer

    with ChromaServer(tmp_path_factory.mktemp("chroma-server")) as server:
        yield server
