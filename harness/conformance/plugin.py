"""pytest plugin of the conformance suite (entry point `pytest11`): options, markers, fixtures, report.

Options (group "magbench conformance"): `--memory-system MODULE:FACTORY` (or a registry name),
`--memory-system-option KEY=VALUE` (repeatable, passed to the factory), `--conformance-report DIR`.
Markers: `requirement(*ids)` names the SPEC.md requirements a test checks; `capability(name)` runs a
test only for systems that declare the capability (others skip it, with the reason).
Tests that only search a loaded system share one (`shared_system`); the others open their own. The report says
how often the system was opened and how long opening took, the suite's cost for a system slow to open.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections import defaultdict
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.protocol import SystemContext
from harness.systems.options import OptionError, parse_options
from harness.systems.registry import check_declaration, resolve
from harness.systems.scoped import in_one_scope

DIM = 32


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("magbench conformance", "MagneticBench conformance suite")
    group.addoption("--memory-system", metavar="MODULE:FACTORY", help="the system under test (or a registry name)")
    group.addoption(
        "--memory-system-option",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="an option for the factory (repeatable; values are Python literals or strings)",
    )
    group.addoption("--conformance-report", metavar="DIR", help="write conformance.md and conformance.json here")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "requirement(*ids): SPEC.md requirement IDs that this test checks")
    config.addinivalue_line("markers", "capability(name): only for systems that declare this capability")
    if config.getoption("--memory-system", default=None):
        config.pluginmanager.register(RequirementReport(config), "magbench-requirement-report")


@dataclass
class Openings:
    """How often the suite opened the system, and the seconds the factory took in all."""

    times: int = 0
    seconds: float = 0.0


OPENINGS = pytest.StashKey[Openings]()


class SystemUnderTest:
    """Opens the system under test in a fresh work directory; `reopen` closes it and opens it again there.
    A system that declares `scoped_only` is searched in the scope of unscoped documents (`in_one_scope`)."""

    def __init__(self, spec: str, options: dict[str, Any], openings: Openings | None = None) -> None:
        self.spec = spec
        self.options = options
        self.factory = resolve(spec)
        self.openings = openings or Openings()
        self._workdir_of: dict[int, Path] = {}
        self._open: list[Any] = []
        self._folders: list[str] = []

    def open(self, workdir: Path | None = None) -> Any:
        if workdir is None:
            self._folders.append(tempfile.mkdtemp(prefix="magbench-conformance-"))
            workdir = Path(self._folders[-1])
        started = time.perf_counter()
        system = self.factory(SystemContext(dim=DIM, workdir=workdir, encoder="vectors"), **self.options)
        self.openings.times += 1
        self.openings.seconds += time.perf_counter() - started
        check_declaration(system)
        system = in_one_scope(system)
        self._workdir_of[id(system)] = workdir
        self._open.append(system)
        return system

    def reopen(self, system: Any) -> Any:
        """Close `system` and open the system again on the same work directory (its stored state)."""
        self._close(system)
        return self.open(self._workdir_of[id(system)])

    def close_all(self) -> None:
        while self._open:
            self._close(self._open[-1])
        for folder in self._folders:
            shutil.rmtree(folder, ignore_errors=True)

    def _close(self, system: Any) -> None:
        self._open.remove(system)
        system.close()


def _options(config: pytest.Config) -> dict[str, Any]:
    try:
        return parse_options(config.getoption("--memory-system-option"))
    except OptionError as error:
        raise pytest.UsageError(f"--memory-system-option: {error}") from None


def _openings(config: pytest.Config) -> Openings:
    return config.stash.setdefault(OPENINGS, Openings())


@pytest.fixture(scope="session")
def shared_system(pytestconfig: pytest.Config) -> Iterator[Any]:
    """One system for the whole session, opened first: its declaration says which tests run, and the tests that
    only search a loaded system share it (`loaded`)."""
    spec = pytestconfig.getoption("--memory-system")
    if not spec:
        pytest.skip("no --memory-system given: the conformance suite needs a system to test")
    shared = SystemUnderTest(spec, _options(pytestconfig), _openings(pytestconfig))
    try:
        yield shared.open()
    finally:
        shared.close_all()


@pytest.fixture(scope="session")
def declared_capabilities(shared_system: Any) -> frozenset[str]:
    return frozenset(shared_system.capabilities)


@pytest.fixture
def system_under_test(
    pytestconfig: pytest.Config, declared_capabilities: frozenset[str], request: pytest.FixtureRequest
) -> Iterator[SystemUnderTest]:
    """Opens systems of the test's own (a test that writes, deletes or needs an empty system)."""
    for marker in request.node.iter_markers("capability"):
        if marker.args[0] not in declared_capabilities:
            pytest.skip(f"the system does not declare the '{marker.args[0]}' capability")
    under_test = SystemUnderTest(
        pytestconfig.getoption("--memory-system"), _options(pytestconfig), _openings(pytestconfig)
    )
    yield under_test
    under_test.close_all()


class RequirementReport:
    """Collects outcomes per requirement and writes the table at the end of the session."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.started = time.perf_counter()
        self.requirements_of: dict[str, tuple[str, ...]] = {}
        self.outcomes: dict[str, list[tuple[str, str, str]]] = defaultdict(list)

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            self.requirements_of[item.nodeid] = tuple(
                rid for marker in item.iter_markers("requirement") for rid in marker.args
            )

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """A failure that is not one of the suite's checks (an error the system raised) is named by the
        requirements its test checks and where it was raised, in the terminal's summary too."""
        report = yield
        crash = getattr(report.longrepr, "reprcrash", None)
        if report.failed and crash is not None and not crash.message.startswith(("AssertionError: MB-", "Failed: MB-")):
            rids = ", ".join(self.requirements_of.get(item.nodeid, ())) or "conformance"
            crash.message = f"{rids}: {crash.message} (raised at {crash.path}:{crash.lineno})"
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call" or (report.when == "setup" and not report.passed):
            reason = ""
            if report.skipped and isinstance(report.longrepr, tuple):
                reason = str(report.longrepr[2]).removeprefix("Skipped: ")
            elif report.failed:
                reason = failure(report)
            for rid in self.requirements_of.get(report.nodeid, ()):
                self.outcomes[rid].append((report.nodeid.split("::")[-1], report.outcome, reason))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        table = {rid: self._verdict(results) for rid, results in sorted(self.outcomes.items())}
        spec = self.config.getoption("--memory-system")
        lines = [f"# Conformance of `{spec}`", "", "| requirement | outcome | tests | note |", "|---|---|---|---|"]
        for rid, entry in table.items():
            note = entry["note"].replace("|", "\\|")
            lines.append(f"| {rid} | {entry['outcome']} | {', '.join(entry['tests'])} | {note} |")
        openings, took = _openings(self.config), time.perf_counter() - self.started
        lines += [
            "",
            f"The suite took {took:.1f} s and opened the system {openings.times} times ({openings.seconds:.1f} s).",
        ]
        markdown = "\n".join(lines) + "\n"
        writer = self.config.get_terminal_writer()
        writer.line("\n" + markdown)
        out = self.config.getoption("--conformance-report")
        if out:
            Path(out).mkdir(parents=True, exist_ok=True)
            (Path(out) / "conformance.md").write_text(markdown)
            (Path(out) / "conformance.json").write_text(
                json.dumps(
                    {
                        "system": spec,
                        "requirements": table,
                        "seconds": took,
                        "opened": {"times": openings.times, "seconds": openings.seconds},
                    },
                    indent=1,
                )
            )

    @staticmethod
    def _verdict(results: list[tuple[str, str, str]]) -> dict[str, Any]:
        outcomes = {outcome for _, outcome, _ in results}
        outcome = "failed" if "failed" in outcomes else "passed" if "passed" in outcomes else "skipped"
        notes = sorted({reason for _, result, reason in results if result == outcome and reason})
        return {"outcome": outcome, "tests": [name for name, _, _ in results], "note": "; ".join(notes)[:NOTE]}


NOTE = 1000
"""Characters of a requirement's note: a failure's message, or what several failures said."""


def failure(report: pytest.TestReport) -> str:
    """What a failed test said, on one line: its check's message (the requirement, the document or query, what
    was expected and what came back), or the error the system raised and where."""
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is None:
        return report.longreprtext.strip().splitlines()[-1] if report.longreprtext else "failed"
    message = str(crash.message).split("\nassert ")[0].removeprefix("AssertionError: ").removeprefix("Failed: ")
    return " ".join(message.split())
