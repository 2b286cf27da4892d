"""Repository ingestion on a git repository the test builds, with every kind of file to skip."""

import os
import subprocess

import pytest

from reference import CellularMemory
from reference.agent import MemoryAgent
from reference.agent.tools.repository import ingest_repository
from reference.encoders import MockEncoder


@pytest.fixture
def repository(tmp_path):
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "billing.py").write_text("def invoice_total(lines):\n    return sum(l.amount for l in lines)\n")
    (root / "README.md").write_text("# Shop\nThe shop computes invoices and ships parcels.\n")
    (root / "vendor").mkdir()
    (root / "vendor" / "lib.js").write_text("var vendored = 1;\n")
    (root / "pkg" / "node_modules" / "dep").mkdir(parents=True)
    (root / "pkg" / "node_modules" / "dep" / "index.js").write_text("module.exports = 1;\n")
    (root / "pkg" / "shipping.py").write_text("def ship(parcel):\n    return parcel.send()\n")
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    (root / "huge.log").write_text("x" * 600_000)
    outside = tmp_path / "secret.txt"
    outside.write_text("a password outside the repository")
    os.symlink(outside, root / "escape.txt")
    os.symlink(tmp_path, root / "escape_dir")
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@x",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@x",
    }
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *command], cwd=root, check=True, env=env, capture_output=True)
    return root


def check_report(report):
    assert sorted(report.files) == ["README.md", "pkg/shipping.py", "src/billing.py"]
    skipped = report.skipped
    assert skipped["vendor"].startswith("vendored") and skipped["pkg/node_modules"].startswith("vendored")
    assert skipped["logo.png"].startswith("binary") and skipped["huge.log"].startswith("larger")
    assert skipped["escape.txt"] == "symlink (never followed)"


def test_local_directory(repository):
    with CellularMemory(encoder=MockEncoder()) as memory:
        report = ingest_repository(memory, str(repository))
        check_report(report)
        assert ".git" in report.skipped
        assert report.skipped["escape_dir"] == "symlink (never followed)"
        assert report.cells == len(memory) == 3
        assert all("password" not in memory.get(i).text for i in memory.ids())
        hit = memory.search("What does src/billing.py do?", k=1)[0]
        assert hit.text.startswith("[File: src/billing.py]") and hit.metadata["path"] == "src/billing.py"


def test_git_url_is_cloned_shallow(repository):
    with CellularMemory(encoder=MockEncoder()) as memory:
        report = ingest_repository(memory, f"file://{repository}")
        assert sorted(report.files) == ["README.md", "pkg/shipping.py", "src/billing.py"]
        assert report.skipped["escape.txt"] == "symlink (never followed)"  # git keeps the link


def test_long_files_become_several_chunks_with_line_numbers(tmp_path):
    (tmp_path / "long.txt").write_text("\n".join(f"line {i} of a long file" for i in range(400)))
    with CellularMemory(encoder=MockEncoder()) as memory:
        report = ingest_repository(memory, str(tmp_path), chunk_chars=500)
        starts = sorted(memory.get(i).metadata["start_line"] for i in memory.ids())
        assert report.cells == len(starts) > 10 and starts[0] == 1
        assert all(len(memory.get(i).text) < 600 for i in memory.ids())


def test_the_tool_reports_and_refuses_bad_sources(repository, tmp_path):
    with CellularMemory(encoder=MockEncoder()) as memory:
        agent = MemoryAgent(memory, None)
        result = agent.run_command(f"/ingest {repository}")
        assert result.ok and "ingested 3 files" in result.text and "skipped huge.log" in result.text
        assert not agent.run_command(f"/ingest {tmp_path / 'missing'}").ok
        failed = agent.run_command(f"/ingest file://{tmp_path / 'nothing'}.git")
        assert not failed.ok and "git clone" in failed.text


def test_hard_links_nul_bytes_late_in_a_file_and_fifos_are_skipped_not_fatal(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    (root / "notes.md").write_text("release notes for the parser\n")
    outside = tmp_path / "secret.txt"
    outside.write_text("a password outside the repository")
    os.link(outside, root / "linked.txt")  # a hard link: its other name is outside the tree
    (root / "late-nul.txt").write_bytes(b"text " * 2_000 + b"\x00 then binary")
    os.mkfifo(root / "pipe")
    with CellularMemory(encoder=MockEncoder()) as memory:
        report = ingest_repository(memory, str(root))
        assert report.files == ["notes.md"] and report.cells == len(memory) == 1
        assert report.skipped["linked.txt"].startswith("a hard link")
        assert report.skipped["late-nul.txt"] == "binary" and report.skipped["pipe"] == "not a regular file"


def test_a_file_swapped_for_a_symlink_during_ingest_is_never_read_through_it(tmp_path):
    """A race: another thread swaps a file for a symlink to a secret, again and again, while ingests run;
    the secret never enters memory."""
    import threading

    root = tmp_path / "repo"
    root.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("the vault code is 7777")
    target = root / "swapped.txt"
    stop = threading.Event()

    def swap() -> None:
        while not stop.is_set():
            for make in (lambda: target.write_text("harmless text"), lambda: os.symlink(secret, target)):
                try:
                    target.unlink(missing_ok=True)
                    make()
                except OSError:
                    pass

    swapper = threading.Thread(target=swap, daemon=True)
    swapper.start()
    try:
        with CellularMemory(encoder=MockEncoder()) as memory:
            for _ in range(1_500):  # the path-checking reader read the secret in 16 of 1,498
                ingest_repository(memory, str(root))
            assert all("7777" not in memory.get(i).text for i in memory.ids())
    finally:
        stop.set()
        swapper.join()
