"""The agent-memory peers (extras `mem0`, `mempalace`, `langmem`, `txtai`; `tox -e peers` installs them): offline,
on the harness's vectors, and through the conformance suite, whose failures are findings about each system, each
named here with its cause so that a change in what a peer passes shows. Without a peer's package its tests skip
with the line that installs it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harness.protocol import Document, Query, SystemContext
from harness.systems.registry import PEERS, SYSTEMS
from tests.extras import needs

DROPS_NEGATIVE = {"MB-ERR-1", "MB-SEARCH-4", "MB-SCOPE-1", "MB-FILTER-1", "MB-UPDATE-2"}
"""Hits whose similarity is 0 or less are dropped (mem0's threshold has 0 as its floor; txtai's similar()), so a
search over documents with negative similarities returns fewer than min(k, n)."""
FINDINGS = {
    "mem0": DROPS_NEGATIVE,
    "mempalace": set(),
    "langmem": set(),
    "txtai": DROPS_NEGATIVE | {"MB-SCOPE-3"},
    "txtai-hybrid": DROPS_NEGATIVE | {"MB-SCOPE-3"},
}
"""Requirements each peer fails (MB-SCOPE-3 for txtai: a scope is a filter applied after txtai's candidate pool, so
other scopes' writes change a scoped search)."""


def open_peer(system: str, tmp_path: Path):
    needs(system)
    return SYSTEMS[system](SystemContext(8, tmp_path))


@pytest.mark.parametrize("system", PEERS)
def test_a_peer_searches_the_harness_vectors_by_scope(system, tmp_path):
    peer = open_peer(system, tmp_path)
    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(12, 8)).astype(np.float32) + 2.0  # all similarities positive
    try:
        peer.add([Document(f"d{i}", f"turn {i}", vectors[i], {"n": i}, "a" if i < 6 else "b") for i in range(12)])
        hits = peer.search(Query("q", "turn 3", vectors[3]), k=5)
        assert hits[0].doc_id == "d3" and len(hits) == 5
        scoped = peer.search(Query("q", "turn 9", vectors[9], scope="a"), k=10)
        assert {h.doc_id for h in scoped} == {f"d{i}" for i in range(6)}
        peer.delete(["d3"])
        assert "d3" not in {h.doc_id for h in peer.search(Query("q", "turn 3", vectors[3]), k=11)}
    finally:
        peer.close()


def test_mem0_stays_on_this_machine(tmp_path):
    peer = open_peer("mem0", tmp_path)
    try:
        from mem0.memory import telemetry

        assert telemetry.MEM0_TELEMETRY is False
        assert Path(os.environ["MEM0_DIR"]) != Path.home() / ".mem0"
        assert str(peer._memory.llm.client.base_url).startswith("http://127.0.0.1")
    finally:
        peer.close()


@pytest.mark.slow
@pytest.mark.parametrize("system", PEERS)
def test_conformance_of_each_peer_fails_only_its_findings(system, tmp_path):
    needs(system)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    subprocess.run(
        [sys.executable, "-m", "harness.cli", "conformance", system, "--report", str(tmp_path)],
        env=env,
        capture_output=True,
        timeout=900,
        check=False,
    )
    table = json.loads((tmp_path / "conformance.json").read_text())["requirements"]
    failed = {requirement for requirement, row in table.items() if row["outcome"] == "failed"}
    assert failed == FINDINGS[system], {r: table[r]["note"] for r in failed ^ FINDINGS[system]}
