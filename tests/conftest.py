"""Fixtures shared by every suite: encoders, stand-in servers, per-test Chroma directories."""

from __future__ import annotations

import os
import socket

import pytest

from reference.encoders import MockEncoder
from tests.reliability.counts import REPORT as RELIABILITY_REPORT

os.environ.setdefault("HF_HUB_OFFLINE", "1")
SLOW_SUITES = ("tests/reliability/", "tests/integration/test_cli.py", "tests/integration/test_sleep_concurrency.py")
"""Crash, soak, fuzz, churn, the CLI's benchmark runs and the sleep races: most of the suite's time."""


@pytest.hookimpl(trylast=True)  # after the tmp_path plugin has made its factory
def pytest_configure(config: pytest.Config) -> None:
    """Before any worker starts (xdist workers inherit the environment): the reliability counts go to this session's
    temporary folder unless MAGBENCH_RELIABILITY_REPORT names a file, and ir_datasets (which ranx imports) makes its
    folders there instead of in the home directory."""
    if hasattr(config, "workerinput"):  # an xdist worker: the controller has chosen
        return
    session = config._tmp_path_factory.getbasetemp()
    os.environ.setdefault(RELIABILITY_REPORT, str(session / "reliability.json"))
    os.environ.setdefault("IR_DATASETS_HOME", str(session / "ir_datasets"))
    os.environ.setdefault("IR_DATASETS_TMP", str(session / "ir_datasets-tmp"))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Name the reliability counts when this session wrote them."""
    report = os.environ.get(RELIABILITY_REPORT)
    if report and os.path.exists(report):
        terminalreporter.write_line(f"reliability counts (what each reliability test ran): {report}")


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
    from harness.measure.server_processes import ChromaServer

    with ChromaServer(tmp_path_factory.mktemp("chroma-server")) as server:
        yield server


@pytest.fixture(scope="module")
def postgres_server():
    """A PostgreSQL server for the module, from the machine's binaries (each xdist worker starts its own); skipped
    with the install line where there are none or psycopg is missing."""
    from harness.measure.postgres import INSTALL, PostgresServer, binaries

    pytest.importorskip("psycopg", reason="the PostgreSQL store needs psycopg 3: pip install -e '.[postgres]'")
    if binaries() is None:
        pytest.skip(f"no PostgreSQL binaries: {INSTALL}")
    with PostgresServer() as server:
        yield server
